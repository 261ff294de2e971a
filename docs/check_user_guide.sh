#!/usr/bin/env bash
# Checks docs/user-guide.md against the code (the ctest docs_user_guide_matches_the_code):
#
#   docs/check_user_guide.sh [SOURCE_DIR]
#
# - environment: the variables in the guide's tables (header `| variable | default | meaning |`) are
#   exactly the ones the sources read: getenv, EnvInt, IntFromEnvironment (C++), os.environ / os.getenv
#   (Python), $ENV{} (CMake), ${NAME:-...} (shell scripts), NAME ?= (Makefile);
# - exit status: every status tpusim, tpuc, python -m tpusim.train and python -m tpusim.parity return
#   has a row in the exit table with an entry for that tool;
# - chip errors: the ERROR_CODE table lists exactly the `error NAME VALUE` lines of rtl/spec/isa.def;
# - messages: in every error table (header `| code | message | cause | what to do |`), each code is a
#   name the sources use, and each backquoted message, cut at its `<...>` placeholders, has every piece
#   (of four characters or more, without the spaces and , ; : ' " at its ends) in a non-comment line
#   of a non-test source file of sw/, sim/, compiler/ or sysc/;
# - opcodes: the guide links opcodes.md and copies none of its rows;
# - links: every relative link of the guide names an existing file.
# Prints one line per problem and exits 1 if there is any.
set -euo pipefail

root=$(cd "${1:-$(dirname "$0")/..}" && pwd)
guide=$root/docs/user-guide.md
problems=0
problem() {
  echo "docs/user-guide.md: $*" >&2
  problems=$((problems + 1))
}
[ -f "$guide" ] || { echo "no $guide" >&2; exit 1; }

# Lines of the tables whose header line is exactly $1 (the header and the |---| line excluded).
table_rows() {
  awk -v header="$1" '$0 == header { on = 1; getline; next } on && /^\|/ { print; next } { on = 0 }' "$guide"
}
# Field $1 (1 = first cell) of a table row on stdin, without the spaces around it.
cell() { awk -F'|' -v n="$1" '{ field = $(n + 1); gsub(/^ +| +$/, "", field); print field }'; }

# Source files, outside build/, .git/ and docs/.
sources() {
  find "$root" \( -path "$root/build" -o -path "$root/.git" -o -path "$root/docs" \) -prune -o -type f \
    \( -name '*.cc' -o -name '*.h' -o -name '*.py' -o -name '*.sh' -o -name '*.cmake' -o -name CMakeLists.txt \
       -o -name Makefile \) -print
}

# --- environment variables --------------------------------------------------------------------------
# C++ and Python anywhere, $ENV{} in CMake files, ${NAME:-default} in shell scripts, NAME ?= in the Makefile.
read_vars=$(
  {
    sources | grep -E '\.(cc|h|py)$' | xargs cat |
      grep -oE '(getenv|EnvInt|FromEnvironment|environ\.get|environ\.setdefault)\(\s*"[A-Z][A-Z0-9_]*"|environ\["[A-Z][A-Z0-9_]*"\]' || true
    sources | grep -E '(CMakeLists\.txt|\.cmake)$' | xargs cat | grep -oE '\$ENV\{[A-Z][A-Z0-9_]*\}' | sed 's/^.ENV//' || true
    sources | grep -E '\.sh$' | xargs cat | grep -oE '\$\{[A-Z][A-Z0-9_]*:-' || true
    grep -oE '^[A-Z][A-Z0-9_]* \?=' "$root/Makefile" || true
  } | grep -oE '[A-Z][A-Z0-9_]+' | sort -u)
guide_vars=$(table_rows '| variable | default | meaning |' | cell 1 | grep -oE '`[A-Z][A-Z0-9_]*`' | tr -d '`' | sort -u)
[ -n "$guide_vars" ] || problem "no environment table (header '| variable | default | meaning |')"
for var in $(comm -23 <(echo "$read_vars") <(echo "$guide_vars")); do
  problem "the sources read $var; the environment tables do not list it"
done
for var in $(comm -13 <(echo "$read_vars") <(echo "$guide_vars")); do
  problem "the environment tables list $var; no source reads it"
done

# --- exit status -------------------------------------------------------------------------------------
exit_header='| status | tpusim | tpuc | python -m tpusim.train | python -m tpusim.parity |'
exit_rows=$(table_rows "$exit_header")
[ -n "$exit_rows" ] || problem "no exit status table (header '$exit_header')"
check_exit() {  # column, tool, statuses the code returns
  local column=$1 tool=$2 status entry
  [ -n "$3" ] || problem "found no exit status in the code of $tool (has it moved?)"
  for status in $3; do
    entry=$(echo "$exit_rows" | awk -F'|' -v s="$status" '{ v = $2; gsub(/ /, "", v) } v == s' | cell "$column")
    if [ -z "$entry" ] || [ "$entry" = "—" ]; then
      problem "$tool returns $status; the exit status table has no entry for it"
    fi
  done
}
check_exit 2 tpusim "$(grep -oE 'constexpr int kExit[A-Za-z]* = [0-9]+;' "$root/sim/tpusim/main.cc" | grep -oE '[0-9]+')"
check_exit 3 tpuc "$(grep -oE 'return [0-9]+;' "$root/compiler/tools/tpuc.cc" | grep -oE '[0-9]+' | sort -u)"
check_exit 4 'python -m tpusim.train' "$(grep -oE '^ +return [0-9]+ *$' "$root/sw/frontend/tpusim/train.py" | grep -oE '[0-9]+')"
check_exit 5 'python -m tpusim.parity' "$(grep -oE '^ +return [0-9]+ *$' "$root/sw/frontend/tpusim/parity.py" | grep -oE '[0-9]+')"

# --- chip error codes --------------------------------------------------------------------------------
spec_errors=$(awk '$1 == "error" { print $2 " " $3 }' "$root/rtl/spec/isa.def" | sort)
guide_errors=$(table_rows '| ERROR_CODE | value | raised when | status | what to do |' |
               awk -F'|' '{ n = $2; v = $3; gsub(/[ `]/, "", n); gsub(/ /, "", v); print n " " v }' | sort)
[ -n "$spec_errors" ] || problem "no 'error NAME VALUE' lines in rtl/spec/isa.def"
while read -r line; do
  if [ -n "$line" ]; then problem "rtl/spec/isa.def has error $line; the ERROR_CODE table does not"; fi
done < <(comm -23 <(echo "$spec_errors") <(echo "$guide_errors"))
while read -r line; do
  if [ -n "$line" ]; then problem "the ERROR_CODE table has $line; rtl/spec/isa.def does not"; fi
done < <(comm -13 <(echo "$spec_errors") <(echo "$guide_errors"))

# --- error messages ----------------------------------------------------------------------------------
# The text users can see: non-test sources of the layers that report errors, comment lines left out and
# string literals continued on the next line joined.
corpus=$(mktemp)
trap 'rm -f "$corpus"' EXIT
find "$root/sw" "$root/sim" "$root/compiler" "$root/sysc" -type f \( -name '*.cc' -o -name '*.h' -o -name '*.py' \) \
  ! -name '*_test.*' ! -name '*_testing.h' ! -path '*/tests/*' -print0 | xargs -0 cat |
  grep -vE '^[[:space:]]*(//|#)' | sed -zE 's/"[[:space:]]*\n[[:space:]]*[fr]?"//g' > "$corpus"
message_report=$(awk -v header='| code | message | cause | what to do |' '
  function trim(text) { gsub(/^[ ,;:\047"]+|[ ,;:\047"]+$/, "", text); return text }
  FNR == NR { corpus = $0; next }   # the corpus is one record (RS below)
  $0 == header { on = 1; getline; next }
  !on || !/^\|/ { on = 0; next }
  {
    rows++
    split($0, cells, "|")
    code = cells[2]; gsub(/[ `]/, "", code)
    if (code != "—" && !match(corpus, "(^|[^A-Za-z0-9_])" code "([^A-Za-z0-9_]|$)"))
      print "error code " code " is used nowhere in the sources"
    text = cells[3]; found = 0
    while (match(text, /`[^`]+`/)) {
      message = substr(text, RSTART + 1, RLENGTH - 2); text = substr(text, RSTART + RLENGTH); found = 1
      n = split(message, pieces, /<[^>]*>/)
      for (i = 1; i <= n; i++) {
        piece = trim(pieces[i])
        if (length(piece) >= 4 && !index(corpus, piece))
          print "message `" message "`: \047" piece "\047 is in no source"
      }
    }
    if (!found) print "a row of an error table has no message: " $0
  }
  END { print "rows " rows + 0 }' RS='\001' "$corpus" RS='\n' "$guide")
rows=$(echo "$message_report" | awk '$1 == "rows" { print $2 }')
[ "$rows" -gt 0 ] || problem "no error table (header '| code | message | cause | what to do |')"
while IFS= read -r line; do
  problem "$line"
done < <(echo "$message_report" | grep -v '^rows ')

# --- opcodes -----------------------------------------------------------------------------------------
grep -q '](opcodes.md)' "$guide" || problem "does not link opcodes.md"
while IFS= read -r row; do
  if grep -qxF -- "$row" "$guide"; then problem "copies the opcodes.md row '$row' (link to it instead)"; fi
done < <(grep -E '^\| [a-z-]+ \|' "$root/docs/opcodes.md")

# --- links -------------------------------------------------------------------------------------------
while IFS= read -r target; do
  path=${target%%#*}
  [ -z "$path" ] && continue
  [ -e "$root/docs/$path" ] || problem "links to $target, which does not exist"
done < <(grep -oE '\]\([^)]+\)' "$guide" | sed -E 's/^\]\(//; s/\)$//' | grep -vE '^[a-z]+:')

if [ "$problems" -gt 0 ]; then
  echo "docs/user-guide.md: $problems problem(s); fix the guide or the code" >&2
  exit 1
fi
echo "docs/user-guide.md matches the code ($(echo "$guide_vars" | wc -l) variables, $rows error table rows)"
