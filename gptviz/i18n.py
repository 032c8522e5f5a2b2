"""The reader's language: gettext catalogs (Babel) looked up per session, never per process.

Every sentence a user reads is written in English in the source, marked ``_("…")`` (or
``ngettext`` for a count, ``N_`` where the translation must wait until it is shown), and
looked up at the moment it is shown in the catalog of the reader's language:
``locale/<lang>/LC_MESSAGES/*.po``, compiled in memory the first time a language is asked
for (no build step; every ``.po`` file of a language's folder is read, so a new part can
sit beside the others). A message missing from a catalog, or marked fuzzy, is the English.

The language is the current session's, never the process's (no ``gettext.install`` or
``locale.setlocale``): the app registers a resolver that reads it from the session running
on this thread (``set_resolver``); outside a session (a script, a test) it is ``LANGUAGE``,
a context variable ``use`` sets. The engine's own messages (a refused upload's) use the same
functions, so the engine stays free of Streamlit.

Named fields are filled after the lookup, ``_("{n} heads").format(n=12)``, so a
translation may move them.

>>> _("Attention")
'Attention'
>>> with use("es"):
...     _("Attention")
'Atención'
>>> with use("es"):
...     number(1234.5, 2), number(0.25, 3)
('1234,50', '0,250')
"""

from __future__ import annotations

import contextlib
import contextvars
import gettext
import io
import os
import re
import threading
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path

# The catalogs: the repository's locale/, or a folder of one's own (GPTVIZ_LOCALE_DIR).
LOCALE_DIR = Path(os.environ.get("GPTVIZ_LOCALE_DIR") or
                  Path(__file__).resolve().parent.parent / "locale")
DOMAIN = "gptviz"
SOURCE = "en"  # the language the source is written in: no catalog
LANGUAGE: contextvars.ContextVar[str] = contextvars.ContextVar("gptviz_language", default=SOURCE)
_resolver: Callable[[], str | None] | None = None
_lock = threading.Lock()
_CODE = re.compile(r"^[a-z]{2,3}(?:_[A-Za-z]{2,4})?$")


def set_resolver(resolver: Callable[[], str | None] | None) -> None:
    """Where the current language comes from when a session is running (the app's);
    ``None`` from the resolver means: no session here, use ``LANGUAGE``."""
    global _resolver
    _resolver = resolver


def current() -> str:
    """The language of whoever is being served on this thread."""
    if _resolver is not None:
        lang = _resolver()
        if lang:
            return lang
    return LANGUAGE.get()


@contextlib.contextmanager
def use(lang: str) -> Iterator[None]:
    """Serve ``lang`` inside the block (outside a session: scripts, tests, the handout)."""
    token = LANGUAGE.set(lang)
    try:
        yield
    finally:
        LANGUAGE.reset(token)


def available() -> list[str]:
    """English and every language with a catalog folder under ``locale/``, sorted."""
    found = [p.name for p in LOCALE_DIR.iterdir()
             if p.is_dir() and _CODE.match(p.name) and any((p / "LC_MESSAGES").glob("*.po"))] \
        if LOCALE_DIR.is_dir() else []
    return [SOURCE] + sorted(set(found) - {SOURCE})


def known(lang: str | None) -> str | None:
    """``lang`` as a language we have (``es-MX`` → ``es``, ``zh-CN`` → ``zh``), else None."""
    if not lang:
        return None
    have = available()
    code = str(lang).strip().replace("-", "_")[:16]
    for candidate in (code, code.split("_")[0].lower()):
        if candidate in have:
            return candidate
    return None


@lru_cache(maxsize=32)
def translations(lang: str) -> gettext.NullTranslations:
    """The compiled catalog of ``lang`` (every ``.po`` of its folder merged), once per
    process; English and a language without a catalog look nothing up."""
    folder = LOCALE_DIR / lang / "LC_MESSAGES"
    if lang == SOURCE or not _CODE.match(lang) or not folder.is_dir():
        return gettext.NullTranslations()
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    with _lock:
        merged: gettext.GNUTranslations | None = None
        for po in sorted(folder.glob("*.po")):
            with po.open("rb") as f:
                catalog = read_po(f, locale=lang.replace("-", "_"), domain=DOMAIN)
            buf = io.BytesIO()
            write_mo(buf, catalog, use_fuzzy=False)  # fuzzy entries are left out: English
            buf.seek(0)
            part = gettext.GNUTranslations(buf)
            if merged is None:
                merged = part
            else:
                merged._catalog.update(  # type: ignore[attr-defined]
                    {k: v for k, v in part._catalog.items() if k != ""})  # type: ignore[attr-defined]
        return merged or gettext.NullTranslations()


def _(message: str) -> str:
    """``message`` in the reader's language (the English where no translation exists)."""
    lang = current()
    if lang == SOURCE:
        return message
    return translations(lang).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The form for ``n`` in the reader's language (its own plural rule)."""
    lang = current()
    if lang == SOURCE:
        return singular if n == 1 else plural
    return translations(lang).ngettext(singular, plural, n)


def pgettext(context: str, message: str) -> str:
    """``message`` where the same English needs two translations, told apart by ``context``."""
    lang = current()
    if lang == SOURCE:
        return message
    return translations(lang).pgettext(context, message)


def N_(message: str) -> str:
    """Mark ``message`` for the catalog without looking it up (module constants, defaults):
    the code that shows it calls ``_`` on it then."""
    return message


@lru_cache(maxsize=64)
def _symbols(lang: str) -> tuple[str, str]:
    """(decimal sign, thousands sign) of ``lang``, from Babel's locale data (CLDR)."""
    if lang == SOURCE:
        return ".", ","
    from babel import Locale, UnknownLocaleError

    try:
        loc = Locale.parse(lang.replace("-", "_"))
    except (UnknownLocaleError, ValueError):
        return ".", ","
    symbols = loc.number_symbols.get("latn", loc.number_symbols)
    return symbols.get("decimal", "."), symbols.get("group", ",")


GROUP_FROM_5 = {"es", "pl", "pt"}  # languages that group only numbers of five digits or more


def separators() -> tuple[str, str]:
    """(decimal sign, thousands sign) of the reader's language: ``(',', '.')`` in Spanish."""
    return _symbols(current())


def number(x: float, digits: int = 3, grouping: bool = False) -> str:
    """``x`` with ``digits`` decimals, written as the reader's language writes numbers (the
    decimal comma in Spanish). Machine formats (CSV, links) keep ``f"{x:.3f}"``.

    >>> number(0.5, 2), number(12345.678, 1, grouping=True)
    ('0.50', '12,345.7')
    >>> with use("es"):
    ...     number(1024, 0, grouping=True), number(50257, 0, grouping=True)
    ('1024', '50.257')
    """
    lang = current().split("_")[0]
    if grouping and lang in GROUP_FROM_5 and abs(x) < 10_000:
        grouping = False  # Spanish writes 1024, 50.257 (CLDR's minimum grouping digits: 2)
    text = f"{x:,.{digits}f}" if grouping else f"{x:.{digits}f}"
    dec, group = separators()
    if (dec, group) == (".", ","):
        return text
    return text.replace(",", "\0").replace(".", dec).replace("\0", group)


# ---- the catalog machinery's view of the source (the coverage script, the tests) ----------

ROOT = Path(__file__).resolve().parent.parent
EXEMPT = ROOT / "locale" / "EXEMPT.txt"


def source_messages() -> dict[object, list[str]]:
    """Every message the source marks (what ``pybabel extract -F babel.cfg -k N_`` finds):
    id (a string, a (singular, plural) pair; ``context\x04id`` with a context) → where it is
    used."""
    from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir
    from babel.messages.frontend import parse_mapping_cfg

    with (ROOT / "babel.cfg").open(encoding="utf-8") as f:
        method_map, options_map = parse_mapping_cfg(f)
    keywords = dict(DEFAULT_KEYWORDS, N_=None)
    found: dict[object, list[str]] = {}
    for path, line, message, _comments, context in extract_from_dir(
            str(ROOT), method_map, options_map, keywords=keywords):
        key = message if context is None else f"{context}\x04{message}"  # gettext's form
        found.setdefault(key, []).append(f"{path}:{line}")
    return found


def catalog_entries(lang: str) -> dict[object, object]:
    """id → translation (a string, or a tuple of plural forms) of every non-fuzzy entry with
    a translation in ``lang``'s ``.po`` files (the later file wins, as at run time)."""
    from babel.messages.pofile import read_po

    entries: dict[object, object] = {}
    for po in sorted((LOCALE_DIR / lang / "LC_MESSAGES").glob("*.po")):
        with po.open("rb") as f:
            catalog = read_po(f, locale=lang)
        for m in catalog:
            if not m.id or m.fuzzy:
                continue
            key = m.id if m.context is None else f"{m.context}\x04{m.id}"
            strings = m.string if isinstance(m.string, tuple) else (m.string,)
            if all(strings):
                entries[key] = m.string
    return entries


def exempt() -> dict[str, list[str]]:
    """The reviewed exemptions (``locale/EXEMPT.txt``): section → lines."""
    sections: dict[str, list[str]] = {}
    current_section = ""
    if EXEMPT.is_file():
        for raw in EXEMPT.read_text(encoding="utf-8").splitlines():
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("[") and line.endswith("]"):
                current_section = line[1:-1]
                continue
            sections.setdefault(current_section, []).append(line)
    return sections
