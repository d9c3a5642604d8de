import pytest

def test_pass():
    assert 1 + 1 == 2

def test_fail():
    assert 2 * 2 == 5, "arithmetic <is> & \"hard\""

@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")

def test_error(broken):
    pass

@pytest.mark.skip(reason="not today")
def test_skip():
    pass

@pytest.mark.xfail(reason="known bug")
def test_xfail():
    assert False

@pytest.mark.parametrize("x", [1, 2, 3])
def test_param(x):
    assert x < 3

def test_unicode_名前():
    assert True
