#!/usr/bin/env bash
# Update the /ui message catalogs: extract messages from api/ui (Python and templates),
# merge them into each locale's messages.po, compile messages.mo (both are committed).
# Usage: bash infra/i18n.sh            extract + update + compile
#        bash infra/i18n.sh compile    compile only (after editing a .po)
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
PYBABEL="${PYBABEL:-$REPO/.venv/bin/pybabel}"
DIR=api/ui/translations
POT="$(mktemp -t arena-ui-XXXXXX.pot)"
trap 'rm -f "$POT"' EXIT
mkdir -p "$DIR"
if [[ "${1:-}" != compile ]]; then
    "$PYBABEL" -q extract -F api/ui/babel.cfg -k _ -k N_ -k gettext --no-location --sort-output \
        --project "Daifugo Arena" -o "$POT" api/ui
    for loc in ja; do
        if [[ -f "$DIR/$loc/LC_MESSAGES/messages.po" ]]; then
            "$PYBABEL" -q update -i "$POT" -d "$DIR" -l "$loc" --no-fuzzy-matching --ignore-obsolete
        else
            "$PYBABEL" -q init -i "$POT" -d "$DIR" -l "$loc"
        fi
    done
fi
"$PYBABEL" -q compile -d "$DIR" --statistics
