#!/bin/sh
# humaneval-jobs.sh: turn HumanEval problems into Airlock jobs, one JSONL
# line each: prompt + solution + test + check(entry_point), run by python3
# in the python template. With `none`, every solution is `return None`
# (a baseline that should fail every problem).
#
#   examples/humaneval-jobs.sh datasets/HumanEval.jsonl.gz |
#     airlock batch - -o humaneval-results.jsonl
set -eu
data=${1:?usage: humaneval-jobs.sh HumanEval.jsonl.gz [none]}
mode=${2:-canonical}
zcat "$data" | jq -c --arg mode "$mode" '
  {id: ((.task_id | gsub("/"; "_")) + (if $mode == "none" then "_none" else "" end)),
   template: "python",
   files: {"t.py": (.prompt +
     (if $mode == "none" then "    return None\n" else .canonical_solution end) +
     "\n\n" + .test + "\n\ncheck(" + .entry_point + ")\n")},
   cmd: ["python3", "t.py"], limits: {wall_ms: 60000}}'
