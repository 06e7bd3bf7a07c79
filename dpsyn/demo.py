"""A self-contained demo input: the shipped Adult sample plus seeded fake PII.

:func:`build_demo_input` reads ``dpsyn/data/adult_sample.data`` (a 4,000-row
sample of UCI Adult, see ``dpsyn/data/NOTICE.md``) with the ``adult`` schema
and adds five columns of *fake* identifiers generated with a seeded Faker
(locale ``en_US``): ``name``, ``email``, ``ssn``, ``phone`` and a short
clinical-style free-text ``note`` that names the person and sometimes gives
their email or phone. It writes ``adult_demo.csv`` and a copy of the shipped
``adult_demo.yaml`` schema to a folder, and returns every identifier value it
inserted so that a test can check that none of them survives scrubbing and
synthesis.

Nothing here belongs to a real person: emails use the reserved
``example.com/.org/.net`` domains (RFC 2606), phone numbers use the fictional
555-0100..555-0199 range, and SSNs are random valid-looking numbers (area
never 000, 666 or 9xx; never the well-known 078-05-1120 or 123-45-6789).

The output depends only on ``seed``, ``n_rows`` and the installed Faker
version.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import pandas as pd
from faker import Faker

from dpsyn.errors import InputError
from dpsyn.io import read_table
from dpsyn.schema import ColumnKind, TableSchema, load_schema

__all__ = ["DEMO_CSV", "DEMO_SCHEMA", "DemoInput", "build_demo_input"]

DEMO_CSV = "adult_demo.csv"
DEMO_SCHEMA = "adult_demo.yaml"
_SAMPLE = "adult_sample.data"
_ID_COLUMNS = ("name", "email", "ssn", "phone")
_EMAIL_DOMAINS = ("example.com", "example.org", "example.net")  # reserved for documentation (RFC 2606)
# Geographic US area codes (public NANP assignments); the line numbers are the fictional 555-01xx range.
_AREA_CODES = (
    "201", "202", "203", "205", "206", "207", "208", "209", "210", "212", "213", "214", "215", "216", "217",
    "218", "219", "224", "225", "228", "229", "231", "234", "239", "240", "248", "251", "252", "253", "254",
    "256", "260", "262", "267", "269", "270", "276", "281", "301", "302", "303", "304", "305", "307", "308",
    "309", "310", "312", "313", "314", "315", "316", "317", "318", "319", "320", "321", "323", "325", "330",
    "334", "336", "337", "339", "347", "351", "352", "360", "361", "386", "401", "402", "404", "405", "406",
    "407", "408", "409", "410", "412", "413", "414", "415", "417", "419", "423", "425", "432", "434", "435",
    "440", "443", "469", "478", "479", "480", "484", "501", "502", "503", "504", "505", "507", "508", "509",
    "510", "512", "513", "515", "516", "517", "518", "520", "530", "540", "541", "559", "561", "562", "563",
    "567", "570", "571", "573", "574", "580", "585", "586", "601", "602", "603", "605", "606", "607", "608",
    "609", "610", "612", "614", "615", "616", "617", "618", "619", "620", "623", "626", "630", "631", "636",
    "641", "646", "650", "651", "660", "661", "662", "678", "682", "701", "702", "703", "704", "706", "707",
    "708", "712", "713", "714", "715", "716", "717", "718", "719", "720", "724", "727", "731", "732", "734",
    "740", "754", "757", "760", "763", "765", "770", "772", "773", "774", "775", "781", "785", "786", "801",
    "802", "803", "804", "805", "806", "808", "810", "812", "813", "814", "815", "816", "817", "818", "828",
    "830", "831", "832", "843", "845", "847", "848", "850", "856", "857", "858", "859", "860", "862", "863",
    "864", "865", "870", "901", "903", "904", "906", "907", "908", "909", "910", "912", "913", "914", "915",
    "916", "917", "918", "919", "920", "925", "928", "931", "936", "937", "940", "941", "947", "949", "951",
    "952", "954", "956", "970", "971", "972", "973", "978", "979", "980", "985", "989",
)  # fmt: skip
_NOTE_TEMPLATES = (
    "Patient {name}, {age}, seen for follow-up; contact {email}.",
    "{name} ({age} y/o {sexword}) reviewed in clinic today. Callback number {phone}.",
    "Follow-up visit for {name}, age {age}. Stable, no medication changes.",
    "Called {name} at {phone} about recent lab results; left a message.",
    "{name}, {age}, presents for annual physical. Summary sent to {email}.",
    "Telehealth visit with {name} ({age}). Advised rest and fluids.",
)
_SSN_BLOCKLIST = {"078-05-1120", "123-45-6789"}  # famous sample SSNs that scanners ignore


@dataclass(frozen=True)
class DemoInput:
    """Where the demo table and its schema were written, and what was seeded into it."""

    data_path: Path
    schema_path: Path
    # every identifier value inserted: full names, emails, SSNs, phones, and each first/last name token
    seeded_values: tuple[str, ...]


def build_demo_input(dest_dir: Path, *, n_rows: int | None = None, seed: int = 0) -> DemoInput:
    """Write ``adult_demo.csv`` and ``adult_demo.yaml`` to ``dest_dir`` and return what was seeded.

    ``n_rows`` keeps the first rows of the shipped sample (all 4,000 if None).
    The same ``seed`` gives byte-identical files.
    """
    dest = Path(dest_dir)
    base_schema = load_schema("adult")
    demo_schema = load_schema("adult_demo")
    data_dir = resources.files("dpsyn") / "data"
    with resources.as_file(data_dir / _SAMPLE) as sample_path:
        df = read_table(sample_path, base_schema)
    if n_rows is not None:
        if isinstance(n_rows, bool) or not isinstance(n_rows, int) or not 1 <= n_rows <= len(df):
            raise InputError(f"n_rows must be an integer from 1 to {len(df)}, got {n_rows!r}")
        df = df.iloc[:n_rows].reset_index(drop=True)

    ids, seeded = _fake_identifiers(df, demo_schema, seed)
    for col in _ID_COLUMNS + ("note",):
        df[col] = ids[col]
    out = _format_for_csv(df, demo_schema)

    dest.mkdir(parents=True, exist_ok=True)
    data_path = dest / DEMO_CSV
    schema_path = dest / DEMO_SCHEMA
    out.to_csv(data_path, index=False, encoding="utf-8", na_rep="?", lineterminator="\n")
    schema_text = (resources.files("dpsyn") / "schemas" / DEMO_SCHEMA).read_text(encoding="utf-8")
    schema_path.write_text(schema_text, encoding="utf-8")
    return DemoInput(data_path=data_path, schema_path=schema_path, seeded_values=seeded)


def _fake_identifiers(df: pd.DataFrame, schema: TableSchema, seed: int) -> tuple[dict[str, list[str]], tuple[str, ...]]:
    fake = Faker("en_US")
    fake.seed_instance(seed)
    rng = random.Random(seed)
    public_words = _public_words(schema)
    cols: dict[str, list[str]] = {c: [] for c in _ID_COLUMNS + ("note",)}
    seeded: dict[str, None] = {}  # insertion-ordered set
    used_names: set[str] = set()
    used_emails: set[str] = set()
    used_ssns: set[str] = set()
    used_phones: set[str] = set()
    for age, sex in zip(df["age"], df["sex"], strict=True):
        first, last = _fake_name(fake, sex, public_words, used_names)
        full = f"{first} {last}"
        email = _unique(lambda f=first, la=last: _email(rng, f, la), used_emails)
        ssn = _unique(lambda: _ssn(rng), used_ssns)
        phone = _unique(lambda: _phone(rng), used_phones)
        age_text = "unknown age" if pd.isna(age) else str(int(age))
        sexword = {"Female": "female", "Male": "male"}.get(sex, "adult") if isinstance(sex, str) else "adult"
        note = rng.choice(_NOTE_TEMPLATES).format(name=full, age=age_text, sexword=sexword, email=email, phone=phone)
        for col, value in zip(_ID_COLUMNS + ("note",), (full, email, ssn, phone, note), strict=True):
            cols[col].append(value)
        for value in (full, first, last, email, ssn, phone):
            seeded[value] = None
    return cols, tuple(seeded)


def _public_words(schema: TableSchema) -> set[str]:
    """Words of the public schema and note templates; fake names must not collide with them."""
    text = [c.name for c in schema.columns]
    for c in schema.columns:
        text += list(c.domain or [])
        text.append(c.template or "")
    text += list(_NOTE_TEMPLATES)
    return {w.lower() for t in text for w in re.findall(r"[A-Za-z]+", t)}


def _fake_name(fake: Faker, sex: object, public_words: set[str], used: set[str]) -> tuple[str, str]:
    for _ in range(1000):
        if sex == "Female":
            first = fake.first_name_female()
        elif sex == "Male":
            first = fake.first_name_male()
        else:
            first = fake.first_name()
        last = fake.last_name()
        tokens = (first, last)
        # plain alphabetic tokens of 3+ letters that are not words of the public schema
        if all(t.isalpha() and len(t) >= 3 and t.lower() not in public_words for t in tokens):
            full = f"{first} {last}"
            if full not in used:
                used.add(full)
                return first, last
    raise RuntimeError("could not draw a unique fake name")  # pragma: no cover


def _unique(draw, used: set[str]) -> str:
    for _ in range(1000):
        value = draw()
        if value not in used:
            used.add(value)
            return value
    raise RuntimeError("could not draw a unique fake identifier")  # pragma: no cover


def _email(rng: random.Random, first: str, last: str) -> str:
    style = rng.randrange(4)
    local = {0: f"{first}.{last}", 1: f"{first[0]}{last}", 2: f"{first}{last[0]}", 3: f"{first}_{last}"}[style]
    if rng.random() < 0.3:
        local += str(rng.randint(1, 99))
    return f"{local.lower()}@{rng.choice(_EMAIL_DOMAINS)}"


def _ssn(rng: random.Random) -> str:
    while True:
        area = rng.randint(1, 899)
        if area == 666:
            continue
        s = f"{area:03d}-{rng.randint(1, 99):02d}-{rng.randint(1, 9999):04d}"
        digits = s.replace("-", "")
        if s not in _SSN_BLOCKLIST and len(set(digits)) > 1:
            return s


def _phone(rng: random.Random) -> str:
    area = rng.choice(_AREA_CODES)
    line = f"555-01{rng.randint(0, 99):02d}"  # 555-0100..0199: reserved for fictional use
    return f"({area}) {line}" if rng.random() < 0.5 else f"{area}-{line}"


def _format_for_csv(df: pd.DataFrame, schema: TableSchema) -> pd.DataFrame:
    """Columns in schema order; integer columns written without a decimal point."""
    out = {}
    for col in schema.columns:
        s = df[col.name]
        if col.kind == ColumnKind.numeric and col.integer:
            s = s.round().astype("Int64")
        out[col.name] = s
    return pd.DataFrame(out)
