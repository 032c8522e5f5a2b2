"""How much of gptviz each language's catalog translates.

    python scripts/i18n_coverage.py [--missing LANG] [--strict]

For every language with a folder under ``locale/``: the messages the source marks today
(``pybabel extract``'s view, not the template file, which may be older), how many have a
translation that is not fuzzy, and the share. ``--missing LANG`` lists the untranslated
ones with where they are used. The reviewed exemptions (``locale/EXEMPT.txt``: Streamlit's
own texts, terms kept in English) are counted per section. ``--strict`` exits 1 when a
language is below 100 %.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere

from gptviz import i18n  # noqa: E402


def coverage() -> dict[str, tuple[int, int, list[object]]]:
    """language → (translated, total, missing ids)."""
    wanted = i18n.source_messages()
    out = {}
    for lang in i18n.available()[1:]:
        have = i18n.catalog_entries(lang)
        missing = [m for m in wanted if m not in have]
        out[lang] = (len(wanted) - len(missing), len(wanted), missing)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missing", metavar="LANG", help="list LANG's untranslated messages")
    parser.add_argument("--strict", action="store_true", help="exit 1 below 100 %%")
    args = parser.parse_args()
    wanted = i18n.source_messages()
    report = coverage()
    print(f"{len(wanted)} messages in the source")
    print("| language | translated | share |")
    print("|---|---|---|")
    for lang, (done, total, _missing) in report.items():
        print(f"| {lang} | {done} / {total} | {100 * done / max(total, 1):.1f} % |")
    sections = i18n.exempt()
    print("exemptions (locale/EXEMPT.txt): "
          + ", ".join(f"{name} {len(lines)}" for name, lines in sections.items()))
    if args.missing:
        for m in report.get(args.missing, (0, 0, []))[2]:
            print(f"{wanted[m][0]}: {m!r}")
    return 1 if args.strict and any(d < t for d, t, _ in report.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
