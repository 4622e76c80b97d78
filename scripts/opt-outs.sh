#!/usr/bin/env bash
# Lists the opt-out variables set in the environment, one per line, and exits 1 if there is any.
# An opt-out is any variable named THUND_SKIP_* (a live service's tests not run) or THUND_BLESS*
# (golden files rewritten instead of compared). "Set" means present at all, an empty value
# included: the tests read them the same way (thund-testkit), so an inherited `THUND_SKIP_SPARK=`
# cannot switch tests off while this script believes they ran. Matched by pattern, so a new
# opt-out is covered without being listed here.
set -euo pipefail
found=$(compgen -e | grep -E '^THUND_(SKIP_|BLESS)' | sort -u || true)
[ -z "$found" ] && exit 0
echo "$found"
exit 1
