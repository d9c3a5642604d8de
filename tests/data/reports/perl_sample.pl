use Test::More tests => 6;
ok(1, 'first passes');
ok(0, 'second fails');
is(2+2, 4, 'is works');
SKIP: { skip "no network", 1; ok(1, 'never'); }
TODO: { local $TODO = "not done"; ok(0, 'todo fails'); }
ok(1, 'name with # hash \# escaped');
