"""A second labelled PII corpus for benchmarks/pii.py, built from other generators than dpsyn's own.

The values come from Faker in fourteen locales (names, street addresses, postcodes, cities,
companies, national phone formats, IBANs, national ID numbers where Faker has them) and from
hand-written generators of formats seen in real records (phones written the way people in
each country write them, dates in every common shape, card numbers of every length, licence,
vehicle, device, health-plan and account numbers). The sentences are hand-written clinical
notes, portal and chat messages, call logs, letters, forms and lists, in the way people write
them: lower-case names in chat, surnames alone, names in lists, "My name is ...", titles, no
context word at all in many places. They were written before, and independently of, dpsyn's
recognizers: nothing here is derived from a dpsyn pattern.

Gold types: PERSON, PHONE_NUMBER, EMAIL_ADDRESS, US_SSN, CREDIT_CARD, STREET_ADDRESS, ZIP_CODE,
LOCATION, ORGANIZATION, DATE_TIME, AGE_OVER_89, NATIONAL_ID, MEDICAL_RECORD_NUMBER,
HEALTH_PLAN_ID, ACCOUNT_NUMBER, LICENSE_NUMBER, VEHICLE_ID, DEVICE_ID, URL, IP_ADDRESS,
IBAN_CODE, ID_NUMBER: the 18 HIPAA Safe Harbor classes that can occur in text, plus the
organization names a general-purpose scrubber is expected to remove.

    from benchmarks.pii_corpus import build_wild_corpus
    corpus = build_wild_corpus(2000, seed=7)   # [{"text", "spans": [[start, end, type, subtype]]}]
"""

from __future__ import annotations

import random
import re
import string
from datetime import date, timedelta

LOCALES = ("en_US", "en_GB", "de_DE", "fr_FR", "it_IT", "es_ES", "pt_BR", "fi_FI", "nl_NL", "sv_SE", "pl_PL",
           "da_DK", "en_AU", "en_IN")  # fmt: skip

WILD_TYPES = [
    "PERSON", "PHONE_NUMBER", "EMAIL_ADDRESS", "US_SSN", "CREDIT_CARD", "STREET_ADDRESS", "ZIP_CODE", "LOCATION",
    "ORGANIZATION", "DATE_TIME", "AGE_OVER_89", "NATIONAL_ID", "MEDICAL_RECORD_NUMBER", "HEALTH_PLAN_ID",
    "ACCOUNT_NUMBER", "LICENSE_NUMBER", "VEHICLE_ID", "DEVICE_ID", "URL", "IP_ADDRESS", "IBAN_CODE", "ID_NUMBER",
]  # fmt: skip

REAL_CITIES = {
    "en_US": ["Boston", "Dayton", "Tucson", "Albany", "Fresno", "Tulsa", "Raleigh", "Omaha"],
    "en_GB": ["Leeds", "Bristol", "Norwich", "Swansea", "Leicester", "Aberdeen"],
    "de_DE": ["Leipzig", "Freiburg", "Kassel", "Münster", "Rostock", "Bochum"],
    "fr_FR": ["Lyon", "Nantes", "Rennes", "Dijon", "Grenoble", "Toulouse"],
    "it_IT": ["Bologna", "Verona", "Parma", "Bari", "Torino", "Padova"],
    "es_ES": ["Sevilla", "Zaragoza", "Bilbao", "Málaga", "Valencia", "Granada"],
    "pt_BR": ["Curitiba", "Recife", "Campinas", "Salvador", "Fortaleza", "Manaus"],
    "fi_FI": ["Tampere", "Oulu", "Turku", "Jyväskylä", "Kuopio", "Lahti"],
    "nl_NL": ["Utrecht", "Eindhoven", "Groningen", "Haarlem", "Leiden", "Zwolle"],
    "sv_SE": ["Göteborg", "Malmö", "Uppsala", "Linköping", "Örebro", "Umeå"],
    "pl_PL": ["Kraków", "Gdańsk", "Wrocław", "Poznań", "Lublin", "Łódź"],
    "da_DK": ["Aarhus", "Odense", "Aalborg", "Esbjerg", "Roskilde", "Vejle"],
    "en_AU": ["Geelong", "Ballarat", "Cairns", "Hobart", "Wollongong", "Darwin"],
    "en_IN": ["Pune", "Nagpur", "Indore", "Kochi", "Mysuru", "Lucknow"],
}
MONTHS = {
    "en": ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"],
    "de": ["Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober",
           "November", "Dezember"],
    "fr": ["janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août", "septembre", "octobre",
           "novembre", "décembre"],
    "es": ["enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "octubre",
           "noviembre", "diciembre"],
    "it": ["gennaio", "febbraio", "marzo", "aprile", "maggio", "giugno", "luglio", "agosto", "settembre",
           "ottobre", "novembre", "dicembre"],
    "pt": ["janeiro", "fevereiro", "março", "abril", "maio", "junho", "julho", "agosto", "setembro", "outubro",
           "novembro", "dezembro"],
    "nl": ["januari", "februari", "maart", "april", "mei", "juni", "juli", "augustus", "september", "oktober",
           "november", "december"],
}  # fmt: skip
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
HOSPITAL_SHAPES = ["{city} General Hospital", "St. {last}'s Hospital", "{city} Medical Center", "Klinikum {city}",
                   "Hôpital {last}", "{last} Family Practice", "{city} Children's Clinic", "Ospedale {last}"]  # fmt: skip


def _luhn_digit(body: str) -> str:
    total = 0
    for i, d in enumerate(reversed(body)):
        n = int(d) * (2 if i % 2 == 0 else 1)
        total += n - 9 if n > 9 else n
    return str((10 - total % 10) % 10)


def _group(s: str, sizes: list[int], sep: str) -> str:
    out, i = [], 0
    for n in sizes:
        out.append(s[i : i + n])
        i += n
    if i < len(s):
        out.append(s[i:])
    return sep.join(p for p in out if p)


class WildGen:
    """Values from Faker (per locale) and hand-written format generators, all seeded."""

    def __init__(self, seed: int):
        from faker import Faker

        self.rng = random.Random(seed)
        self.fakers = {}
        for i, loc in enumerate(LOCALES):
            f = Faker(loc)
            f.seed_instance(seed + i)
            self.fakers[loc] = f

    # -- helpers -------------------------------------------------------------------------
    def pick(self, seq):
        return self.rng.choice(seq)

    def digits(self, n: int, first_nonzero: bool = False) -> str:
        s = "".join(self.rng.choice(string.digits) for _ in range(n))
        return (str(self.rng.randint(1, 9)) + s[1:]) if first_nonzero and n else s

    def letters(self, n: int, pool: str = string.ascii_uppercase) -> str:
        return "".join(self.rng.choice(pool) for _ in range(n))

    # -- people and places ---------------------------------------------------------------
    def person(self, loc: str) -> tuple[str, str]:
        f = self.fakers[loc]
        first = f.first_name()
        last = f.last_name()
        return first, last

    def street(self, loc: str) -> str:
        f = self.fakers[loc]
        s = " ".join(f.street_address().split())
        r = self.rng.random()
        if r < 0.12:
            s += self.pick([f" Apt. {self.rng.randint(1, 999)}", f" Apt {self.rng.randint(1, 60)}B",
                            f", Flat {self.rng.randint(1, 40)}", f" Suite {self.rng.randint(100, 990)}"])  # fmt: skip
        elif r < 0.18 and loc in ("es_ES", "pt_BR"):
            s += self.pick([f", {self.rng.randint(1, 9)}º {self.pick('ABCD')}", f", apto {self.rng.randint(11, 99)}"])
        return s

    def city(self, loc: str) -> str:
        return self.pick(REAL_CITIES[loc]) if self.rng.random() < 0.5 else self.fakers[loc].city()

    def postcode(self, loc: str) -> str:
        if loc == "en_US" and self.rng.random() < 0.2:
            return f"{self.digits(5)}-{self.digits(4)}"
        if loc == "nl_NL" and self.rng.random() < 0.5:
            return f"{self.digits(4, True)} {self.letters(2)}"
        return self.fakers[loc].postcode()

    def org(self, loc: str) -> str:
        if self.rng.random() < 0.4:
            first, last = self.person(loc)
            return self.pick(HOSPITAL_SHAPES).format(city=self.fakers[loc].city(), last=last)
        return " ".join(self.fakers[loc].company().split())

    # -- contact -------------------------------------------------------------------------
    def email(self, first: str, last: str) -> str:
        f = self.fakers["en_US"]
        user = self.pick([f"{first}.{last}", f"{first[0]}{last}", f"{last}{self.rng.randint(1, 99)}",
                          f"{first}_{last}{self.rng.randint(60, 99)}", f.user_name()]).lower()  # fmt: skip
        user = re.sub(r"[^a-z0-9._-]", "", user.encode("ascii", "ignore").decode()) or "user"
        dom = self.pick([f.free_email_domain(), f.domain_name(), "web.de", "orange.fr", "libero.it", "uol.com.br",
                         "outlook.com", "hotmail.co.uk", "yahoo.com.au", "rediffmail.com", "kolumbus.fi"])  # fmt: skip
        return f"{user}@{dom}"

    def phone(self, loc: str) -> tuple[str, str]:
        if self.rng.random() < 0.5:
            return " ".join(self.fakers[loc].phone_number().split()), f"faker:{loc}"
        return self.phone_by_hand()

    def phone_by_hand(self) -> tuple[str, str]:
        d = self.digits
        a = str(self.rng.randint(2, 9))
        forms = [
            ("dk pairs", lambda: self.pick(["-", " "]).join([a + d(1), d(2), d(2), d(2)])),
            ("dk +45", lambda: "+45 " + " ".join(d(2) for _ in range(4))),
            ("fr pairs", lambda: "0" + self.pick("1234567") + " " + " ".join(d(2) for _ in range(4))),
            ("fr +33", lambda: "+33 " + self.pick(["", "(0)"]) + self.pick("67") + " " + " ".join(d(2) for _ in range(4))),
            ("fr dots", lambda: "0" + self.pick("67") + "." + ".".join(d(2) for _ in range(4))),
            ("uk mobile", lambda: "07" + d(3) + " " + d(6)),
            ("uk +44", lambda: "+44 " + self.pick(["7" + d(3) + " " + d(6), "20 " + d(4) + " " + d(4), "(0)161 " + d(3) + " " + d(4)])),
            ("uk london", lambda: self.pick(["020 ", "(020) "]) + d(4) + " " + d(4)),
            ("de mobile", lambda: "01" + self.pick(["51", "52", "60", "70", "76"]) + self.pick([" ", "/", "-", ""]) + d(8)),
            ("de +49", lambda: "+49 " + self.pick(["(0)", ""]) + self.pick(["30", "89", "221", "40"]) + " " + d(self.rng.randint(6, 8))),
            ("de slash", lambda: "0" + self.pick(["30", "89", "6221", "341"]) + "/" + d(self.rng.randint(5, 7))),
            ("au", lambda: self.pick(["(02) ", "(03) ", "02 ", "08 "]) + d(4) + " " + d(4)),
            ("au mobile", lambda: self.pick(["04", "+61 4"]) + d(2) + " " + d(3) + " " + d(3)),
            ("in mobile", lambda: self.pick(["+91 ", "+91-", "0", ""]) + self.pick("6789") + d(4) + self.pick([" ", ""]) + d(5)),
            ("fi", lambda: self.pick(["040 ", "050 ", "+358 40 ", "+358 50 "]) + d(3) + " " + d(4)),
            ("se", lambda: self.pick(["08-", "070-", "073-", "+46 70 "]) + d(3) + " " + d(2) + " " + d(2)),
            ("it", lambda: self.pick(["+39 ", ""]) + "3" + d(2) + " " + d(3) + " " + d(4)),
            ("es", lambda: self.pick(["+34 ", ""]) + self.pick("67") + d(2) + " " + d(2) + " " + d(2) + " " + d(2)),
            ("pt", lambda: self.pick(["+351 ", ""]) + "9" + self.pick("1236") + d(1) + " " + d(3) + " " + d(3)),
            ("br", lambda: self.pick(["+55 ", ""]) + "(" + self.pick(["11", "21", "31", "41", "51", "61", "71", "81"]) + ") 9" + d(4) + "-" + d(4)),
            ("pl", lambda: self.pick(["+48 ", ""]) + self.pick("5678") + d(2) + self.pick([" ", "-"]) + d(3) + self.pick([" ", "-"]) + d(3)),
            ("nl", lambda: self.pick(["06-", "06 ", "+31 6 ", "+31 (0)6 "]) + d(8)),
            ("us paren", lambda: f"({self.rng.randint(201, 989)}) {self.rng.randint(201, 989)}-{d(4)}"),
            ("us dots", lambda: f"{self.rng.randint(201, 989)}.{self.rng.randint(201, 989)}.{d(4)}"),
            ("us spaces", lambda: f"{self.rng.randint(201, 989)} {self.rng.randint(201, 989)} {d(4)}"),
            ("us ext", lambda: f"{self.rng.randint(201, 989)}-{self.rng.randint(201, 989)}-{d(4)} ext. {self.rng.randint(10, 9999)}"),
            ("us +1", lambda: f"+1 ({self.rng.randint(201, 989)}) {self.rng.randint(201, 989)}-{d(4)}"),
            ("us bare", lambda: f"{self.rng.randint(201, 989)}{self.rng.randint(201, 989)}{d(4)}"),
            ("cn mobile", lambda: "1" + self.pick("3589") + d(1) + self.pick([" ", "-", ""]) + d(4) + self.pick([" ", "-", ""]) + d(4)),
            ("cn +86", lambda: "+86 1" + self.pick("3589") + d(1) + " " + d(4) + " " + d(4)),
        ]  # fmt: skip
        name, fn = self.pick(forms)
        return fn(), f"hand:{name}"

    # -- dates ---------------------------------------------------------------------------
    def a_date(self, lo: int = 1930, hi: int = 2025) -> date:
        return date(lo, 1, 1) + timedelta(days=self.rng.randint(0, 365 * (hi - lo)))

    def date_text(self, lo: int = 2015, hi: int = 2025) -> tuple[str, str]:
        d = self.a_date(lo, hi)
        en = MONTHS["en"][d.month - 1]
        lang = self.pick(list(MONTHS))
        loc_m = MONTHS[lang][d.month - 1]
        sfx = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd", 31: "st"}.get(d.day, "th")
        forms = [
            ("iso", f"{d:%Y-%m-%d}"), ("us numeric", f"{d.month}/{d.day}/{d.year}"), ("us padded", f"{d:%m/%d/%Y}"),
            ("us short year", f"{d.month}/{d.day}/{d:%y}"), ("eu slash", f"{d:%d/%m/%Y}"), ("eu dots", f"{d:%d.%m.%Y}"),
            ("eu dots short", f"{d.day}.{d.month}.{d:%y}"), ("eu dashes", f"{d:%d-%m-%Y}"),
            ("month day, year", f"{en} {d.day}, {d.year}"), ("day month year", f"{d.day} {en} {d.year}"),
            ("abbrev", f"{en[:3]} {d.day} {d.year}"), ("abbrev dashes", f"{d.day:02d}-{en[:3]}-{d.year}"),
            ("abbrev caps", f"{d.day:02d}{en[:3].upper()}{d.year}"), ("ordinal", f"{en} {d.day}{sfx}"),
            ("ordinal of", f"the {d.day}{sfx} of {en}"), ("day month", f"{d.day} {en[:3]}"),
            ("month year", f"{en} {d.year}"), ("numeric month/year", f"{d:%m/%Y}"), ("us no year", f"{d.month}/{d.day}"),
            ("weekday date", f"{WEEKDAYS[d.weekday()]}, {en} {d.day}"), ("weekday", WEEKDAYS[d.weekday()]),
            ("localized", f"{d.day} {loc_m} {d.year}" if lang != "de" else f"{d.day}. {loc_m} {d.year}"),
            ("localized de", f"{d.day} de {loc_m} de {d.year}" if lang in ("es", "pt") else f"{d.day} {loc_m} {d.year}"),
            ("iso datetime", f"{d:%Y-%m-%d}T{self.rng.randint(0, 23):02d}:{self.rng.randint(0, 59):02d}"),
            ("datetime", f"{d:%d/%m/%Y} {self.rng.randint(0, 23):02d}:{self.rng.randint(0, 59):02d}"),
            ("compact", f"{d:%Y%m%d}"), ("yyyy/mm/dd", f"{d:%Y/%m/%d}"),
        ]  # fmt: skip
        name, text = self.pick(forms)
        return text, name

    def time_text(self) -> tuple[str, str]:
        h, m = self.rng.randint(0, 23), self.rng.choice([0, 5, 10, 15, 20, 30, 40, 45, 50])
        forms = [("24h", f"{h:02d}:{m:02d}"), ("12h", f"{(h % 12) or 12}:{m:02d} {'pm' if h >= 12 else 'am'}"),
                 ("12h caps", f"{(h % 12) or 12}:{m:02d}{'PM' if h >= 12 else 'AM'}"), ("h", f"{h}h{m:02d}")]  # fmt: skip
        name, text = self.pick(forms)
        return text, name

    # -- numbers -------------------------------------------------------------------------
    def ssn(self) -> str:
        while True:
            area = self.rng.randint(1, 899)
            if area != 666:
                break
        s = f"{area:03d}-{self.rng.randint(1, 99):02d}-{self.rng.randint(1, 9999):04d}"
        if s in ("078-05-1120", "123-45-6789", "219-09-9999"):
            return self.ssn()
        r = self.rng.random()
        return s if r < 0.7 else s.replace("-", " ") if r < 0.85 else s.replace("-", "")

    def card(self) -> tuple[str, str]:
        kind = self.pick(["visa16", "visa19", "mastercard", "amex", "discover", "diners", "jcb16", "jcb15", "maestro",
                          "visa16", "mastercard"])  # fmt: skip
        num = self.fakers["en_US"].credit_card_number(card_type=kind)
        sep = self.pick(["", " ", "-", " "])
        if sep and len(num) == 15:
            num = _group(num, [4, 6, 5], sep)
        elif sep and len(num) == 14:
            num = _group(num, [4, 6, 4], sep)
        elif sep:
            num = _group(num, [4, 4, 4, 4], sep)
        return num, kind

    def iban(self, loc: str) -> str:
        s = self.fakers[loc].iban()
        return _group(s, [4] * 10, " ") if self.rng.random() < 0.5 else s

    def national_id(self, loc: str) -> tuple[str, str]:
        f = self.fakers[loc]
        if loc == "en_GB":
            return f"{self.pick(['AB', 'JT', 'NZ', 'PW', 'SK', 'YL'])} {self.digits(2)} {self.digits(2)} {self.digits(2)} {self.pick('ABCD')}", "uk nino"
        if loc in ("fi_FI", "sv_SE", "nl_NL", "pl_PL", "it_IT", "fr_FR"):
            return f.ssn(), loc
        if loc == "pt_BR":
            return f.cpf(), "br cpf"
        if loc == "es_ES":
            return f.nif(), "es dni"
        if loc == "en_IN":
            a = f.aadhaar_id()
            return (_group(a, [4, 4, 4], " ") if self.rng.random() < 0.6 else a), "in aadhaar"
        if loc == "da_DK":
            d = self.a_date(1940, 2010)
            return f"{d:%d%m%y}-{self.digits(4)}", "dk cpr"
        if loc == "de_DE":
            return self.pick([f"L01X00T{self.digits(2)}", f"T{self.digits(8)}", f"{self.digits(2)} {self.digits(3)} {self.digits(3)} {self.digits(3)}"]), "de id"  # fmt: skip
        if loc == "en_AU":
            return f"{self.digits(3)} {self.digits(3)} {self.digits(3)}", "au tfn"
        body = self.digits(8, True)  # CA SIN (Luhn)
        return _group(body + _luhn_digit(body), [3, 3, 3], " "), "ca sin"

    def mrn(self) -> tuple[str, str]:
        forms = [("digits", self.digits(self.rng.randint(6, 10))), ("letter", f"{self.pick('AEHKMRX')}{self.digits(7)}"),
                 ("grouped", f"{self.digits(2)}-{self.digits(2)}-{self.digits(3)}"), ("prefixed", f"RX{self.digits(7)}"),
                 ("dashed", f"{self.digits(3)}-{self.digits(4)}"), ("padded", "00" + self.digits(6))]  # fmt: skip
        name, v = self.pick(forms)
        return v, name

    def health_plan(self) -> tuple[str, str]:
        a, n = string.ascii_uppercase.replace("S", "").replace("L", "").replace("O", "").replace("I", "").replace("B", "").replace("Z", ""), string.digits  # fmt: skip
        mbi = f"{self.rng.randint(1, 9)}{self.pick(a)}{self.pick(a + n)}{self.pick(n)}-{self.pick(a)}{self.pick(a + n)}{self.pick(n)}-{self.pick(a)}{self.pick(a)}{self.pick(n)}{self.pick(n)}"  # fmt: skip
        nhs = self.nhs_number()
        forms = [("member", f"{self.letters(3)}{self.digits(9)}"), ("member w", f"W{self.digits(9)}"), ("mbi", mbi),
                 ("policy", f"{self.digits(4)}-{self.digits(4)}-{self.digits(2)}"), ("nhs", nhs),
                 ("kvnr", f"{self.letters(1)}{self.digits(9)}"), ("medicare au", f"{self.digits(4)} {self.digits(5)} {self.digits(1)}"),
                 ("group", f"GRP-{self.digits(6)}")]  # fmt: skip
        name, v = self.pick(forms)
        return v, name

    def nhs_number(self) -> str:
        while True:
            body = self.digits(9, True)
            chk = 11 - sum(int(c) * (10 - i) for i, c in enumerate(body)) % 11
            if chk == 11:
                chk = 0
            if chk != 10:
                return _group(body + str(chk), [3, 3, 4], " ")

    def account(self) -> tuple[str, str]:
        forms = [("digits", self.digits(self.rng.randint(8, 12))), ("dashed", f"{self.digits(4)}-{self.digits(4)}-{self.digits(2)}"),
                 ("uk", self.digits(8)), ("prefixed", f"ACC-{self.digits(7)}"), ("short", self.digits(6, True))]  # fmt: skip
        name, v = self.pick(forms)
        return v, name

    def license(self) -> tuple[str, str]:
        dea_pre = self.letters(2, "ABFGMPR")
        d6 = self.digits(6)
        chk = (int(d6[0]) + int(d6[2]) + int(d6[4]) + 2 * (int(d6[1]) + int(d6[3]) + int(d6[5]))) % 10
        forms = [("ca dl", f"{self.letters(1)}{self.digits(7)}"), ("ny dl", f"{self.digits(3)} {self.digits(3)} {self.digits(3)}"),
                 ("fl dl", f"{self.letters(1)}{self.digits(3)}-{self.digits(3)}-{self.digits(2)}-{self.digits(3)}-{self.digits(1)}"),
                 ("il dl", f"{self.letters(1)}{self.digits(3)}-{self.digits(4)}-{self.digits(4)}"), ("dea", f"{dea_pre}{d6}{chk}"),
                 ("medical", f"{self.pick(['MD', 'A', 'G', 'C'])}{self.digits(6)}"), ("nursing", f"RN-{self.digits(6)}"),
                 ("certificate", f"{self.rng.randint(1990, 2024)}-{self.digits(6)}"), ("gmc", self.digits(7)),
                 ("uk dl", f"{self.letters(5)}{self.digits(6)}{self.letters(2)}{self.digits(1)}{self.letters(2)}")]  # fmt: skip
        name, v = self.pick(forms)
        return v, name

    def vin(self) -> str:
        chars = "ABCDEFGHJKLMNPRSTUVWXYZ0123456789"
        values = {**{str(i): i for i in range(10)}, **dict(zip("ABCDEFGH", range(1, 9), strict=True)), **dict(zip("JKLMN", range(1, 6), strict=True)),
                  "P": 7, "R": 9, **dict(zip("STUVWXYZ", range(2, 10), strict=True))}  # fmt: skip
        weights = [8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2]
        v = [self.pick(chars) for _ in range(17)]
        v[9] = self.pick("ABCDEFGHJKLMNPRSTVWXY123456789")
        s = sum(values[c] * w for c, w in zip(v, weights, strict=True)) % 11
        v[8] = "X" if s == 10 else str(s)
        return "".join(v)

    def plate(self, loc: str) -> str:
        return self.fakers[loc].license_plate()

    def serial(self) -> tuple[str, str]:
        imei14 = self.digits(14, True)
        forms = [("pacemaker", f"{self.letters(3)}{self.digits(6)}{self.letters(1)}"), ("dashed", f"{self.digits(2)}-{self.digits(4)}-{self.digits(4)}"),
                 ("mixed", f"{self.digits(1)}{self.letters(2)}{self.digits(4)}-{self.digits(2)}"), ("imei", imei14 + _luhn_digit(imei14)),
                 ("mac", self.fakers["en_US"].mac_address().upper() if self.rng.random() < 0.5 else self.fakers["en_US"].mac_address()),
                 ("uuid", str(self.fakers["en_US"].uuid4())), ("sn", f"SN{self.digits(8)}")]  # fmt: skip
        name, v = self.pick(forms)
        return v, name

    def url(self, first: str, last: str) -> tuple[str, str]:
        f = self.fakers["en_US"]
        slug = re.sub(r"[^a-z0-9]", "", (first + last).lower().encode("ascii", "ignore").decode()) or "user"
        forms = [("facebook", f"https://www.facebook.com/{slug}.{self.rng.randint(1, 99)}"), ("linkedin", f"linkedin.com/in/{slug}-{self.digits(3)}"),
                 ("instagram", f"instagram.com/{slug}_{self.rng.randint(1, 99)}"), ("faker url", f.url().rstrip("/")),
                 ("faker uri", f.uri()), ("www", f"www.{slug}family.net"), ("portal", f"https://portal.{f.domain_name()}/patients/{self.digits(6)}")]  # fmt: skip
        name, v = self.pick(forms)
        return v, name

    def ip(self) -> tuple[str, str]:
        f = self.fakers["en_US"]
        r = self.rng.random()
        if r < 0.5:
            return f.ipv4_public(), "v4"
        if r < 0.75:
            return f.ipv4_private(), "v4 private"
        return f.ipv6(), "v6"

    def age90(self) -> tuple[str, str]:
        return str(self.rng.randint(90, 104)), ""

    def other_id(self) -> tuple[str, str]:
        forms = [("case", f"{self.rng.randint(2015, 2025)}-{self.digits(5)}"), ("employee", f"E-{self.digits(6)}"),
                 ("student", f"S{self.digits(7)}"), ("claim", f"CLM-{self.digits(8)}"), ("badge", self.digits(5, True)),
                 ("ref", self.digits(8, True)), ("ticket", f"{self.digits(4)}-{self.digits(4)}"), ("visa", f"{self.letters(2)}{self.digits(7)}")]  # fmt: skip
        name, v = self.pick(forms)
        return v, name


# -- templates ------------------------------------------------------------------------------
# Placeholders: {kind} or {kind:n} (n = which person of the sentence, 1-3). Written as people
# write notes, messages, letters, forms and lists; identifiers often without a context word.

TEMPLATES: list[tuple[str, str]] = [
    # clinical notes
    ("note", "Pt is a 67 yo F seen in clinic on {date} for f/u of T2DM. Lives with husband {first:2}."),
    ("note", "Discharge summary - {name}, MRN {mrn}. Admitted {date}, discharged {date}. Attending: Dr. {last:2}."),
    ("note", "Spoke with pt's daughter {first:2} ({phone}) re: transport home tomorrow."),
    ("note", "{last} seen today, doing well. {last} reports less pain in the L knee."),
    ("note", "Referred by Dr {name:2} of {hospital} on {date}."),
    ("note", "Nursing note {time}: {first} ambulated in hallway x2, tolerated well."),
    ("note", "Pt {name} DOB {dob} presents with SOB. Home address {address}."),
    ("note", "NOK: {name:2} (wife), tel {phone}, lives at {address}."),
    ("note", "{age90} yo male, retired teacher from {city}, presents with new confusion."),
    ("note", "A {age90}-year-old woman was brought in by her son {name:2} after a fall."),
    ("note", "Pt aged {age90}, resident of {county}, found on the floor at home on {date}."),
    ("note", "Pacemaker (serial {serial}) interrogated on {date}; battery OK, no events."),
    ("note", "Insulin pump SN {serial} replaced, old pump returned to manufacturer."),
    ("note", "Please fax results to {fax} attn {name:2}."),
    ("note", "Lab called at {time} with critical K+ 6.8; Dr. {last:2} notified."),
    ("note", "Pt states: my name is {name} and I live at {street}."),
    ("note", "Transferred from {hospital} ({city}) on {date} by ambulance."),
    ("note", "Allergies: penicillin (rash). PCP: {name:2}, {phone}."),
    ("note", "Chart {mrn}: {first} {last} - BP 142/88, HR 76, afebrile."),
    ("note", "Death certificate no. {license} signed by Dr. {last:2} at {time}."),
    ("note", "Baby girl born {date} at {time}; mother {name}, MRN {mrn}."),
    ("note", "Driver's licence {license} and plate {plate} recorded after the MVA on {date}."),
    ("note", "VIN {vin} on the police report; driver {name} was restrained."),
    ("note", "Family set up a fundraiser page at {url} for {first}."),
    ("note", "SSN {ssn} on file, verified with {name} at registration."),
    ("note", "soc sec # {ssn}; Medicare number {hpid}"),
    ("note", "Employer: {org}; occupation: forklift driver."),
    ("note", "{first} works at {org} in {city} and is worried about time off."),
    ("note", "Case no. {idnum} opened with social services for {name}."),
    ("note", "Occupational health visit, employee ID {idnum}, {org}."),
    ("note", "NHS no. {nhs}, registered with {org}."),
    ("note", "Mrs {last} was seen with her husband; both deny chest pain."),
    ("note", "Seen with {title} {last} and interpreter; consent obtained."),
    ("note", "per {last}: no change to meds"),
    ("note", "Hx from pt and granddaughter {first:2}, who visits most days."),
    ("note", "{name} ({age90}) has lived alone since {date}."),
    ("note", "Resp: pt is {age90} and on 2L O2 via NC."),
    ("note", "Dialysis MWF at {hospital}; transport via {org}."),
    ("note", "Pt's wife {first:2} can be reached on {phone} after {time}."),
    ("note", "Consulted {title} {name:2} ({org}) re anticoagulation."),
    # chat and messages
    ("chat", "hey its {first_lc}!! can u call me at {phone} when ur free"),
    ("chat", "{first_lc} says hi, she moved to {city} last month"),
    ("chat", "lol {name_lc} just texted me"),
    ("chat", "ok so {first_lc} and {first_lc:2} are coming on {weekday}"),
    ("chat", "thx {first}! see u at {time}"),
    ("chat", "my number changed -> {phone}"),
    ("chat", "ping me on {email} or whatsapp {phone}"),
    ("chat", "send it to {street}, {zip} {city} pls"),
    ("chat", "its {name_lc} from accounts, my card {card} got declined again"),
    ("chat", "did {last} ever pay u back??"),
    ("chat", "can someone tell {first_lc} the meeting moved to {date}"),
    ("chat", "{first} {last} here, running 10 min late"),
    ("chat", "new email: {email} (old one got hacked)"),
    ("chat", "i'm at {street} now, buzzer says {last_lc}"),
    ("chat", "omg {first_lc} {last_lc} is my cousin"),
    ("chat", "text {first_lc} on {phone} she knows the code"),
    # letters, e-mails, portal messages
    ("letter", "Dear Mr {last}, thank you for your letter of {date}."),
    ("letter", "Kind regards,\n{name}\n{org}\n{phone}"),
    ("letter", "Hi {first}, your appointment is on {date} at {time} with Dr. {last:2}."),
    ("letter", "To: {email}; Cc: {email:2}"),
    ("letter", "Please find attached the statement for account {account}."),
    ("letter", "My name is {name} and I am writing about my mother, {name:2}."),
    ("letter", "I'm {first}, {last:2}'s neighbour, and I have a key to the flat."),
    ("letter", "This is {name} calling from {org}, my number is {phone}."),
    ("letter", "Signed: {name}, {date}"),
    ("letter", "Dear {first} and {first:2}, thank you for visiting {hospital}."),
    ("letter", "Best,\n{first}\n\nSent from my phone"),
    ("letter", "Per our call on {date}, the refund goes to IBAN {iban}."),
    ("letter", "Your login from {ip} on {date} at {time} was not recognised."),
    ("letter", "Invoice for {name}, {address}. Paid by card ending {card}."),
    ("letter", "Reminder: your repeat prescription is ready at {org}, {street}."),
    ("letter", "Wir bestätigen den Termin am {date} um {time}, {title} {last}."),
    ("letter", "Madame {last}, votre rendez-vous du {date} est confirmé. Tél. {phone}"),
    ("letter", "Estimado Sr. {last}: su cita es el {date} en {hospital}."),
    ("letter", "Gentile {name}, la aspettiamo il {date} presso {hospital}."),
    # forms and records
    ("form", "Name: {name} | DOB: {dob} | Phone: {phone} | Email: {email}"),
    ("form", "Patient: {last_uc}, {first}   Sex: F   DOB: {dob}"),
    ("form", "Address: {address}"),
    ("form", "Postcode: {zip}"),
    ("form", "Emergency contact - {name:2}, {phone}"),
    ("form", "Insurance: {org}, member ID {hpid}, group {idnum}"),
    ("form", "ID document: {natid}"),
    ("form", "national ID number {natid} checked against passport"),
    ("form", "Lic#: {license}  Plate: {plate}  VIN: {vin}"),
    ("form", "Device: {serial}; last seen IP {ip}"),
    ("form", "Account: {account}   IBAN: {iban}"),
    ("form", "Card: {card}"),
    ("form", "Tel: {phone}  Fax: {fax}"),
    ("form", "SSN: {ssn}   Employer: {org}"),
    ("form", "Website: {url}"),
    ("form", "MRN {mrn} / acct {account} / {name}"),
    ("form", "Health plan beneficiary no. {hpid}"),
    ("form", "Serial number: {serial}"),
    ("form", "DOB {dob}; age {age90}"),
    ("form", "{last_uc} {first_uc}, {dob}, {city}"),
    # lists of names
    ("list", "Founders: {last}, {last:2} and {last:3}."),
    ("list", "Present: {name}, {name:2}, {name:3}"),
    ("list", "Care team - Dr. {last}, RN {first:2} {last:2}, PT {first:3}"),
    ("list", "cc: {last_lc}, {last_lc:2}"),
    ("list", "Visitors today: {first}, {first:2} and {first:3} (grandchildren)"),
    ("list", "Shortlisted: {name}; {name:2}; {name:3}."),
    ("list", "on call this weekend: {first_lc}, {first_lc:2}, {first_lc:3}"),
    ("list", "Authors: {last}, {first}; {last:2}, {first:2}."),
    # places and dates
    ("place", "Family lives in {county}, not far from {city}."),
    ("place", "Moved from {city} to {city:2} after the divorce."),
    ("place", "Moved here from Finland as a child, now lives in {city}."),
    ("date", "Seen {date}. Next visit {date}."),
    ("date", "Admitted {date} {time}, discharged {date}."),
    ("date", "d.o.b. {dob}"),
    ("date", "born {dob} in {city}"),
    ("date", "Pronounced dead on {date} at {time}."),
    ("date", "Surgery booked for {date}; pre-op on {weekday}."),
    ("date", "Last menstrual period {date}, EDD {date}."),
]

NO_PII: list[str] = [
    "BP 132/84, HR 88, RR 16, SpO2 96% on RA, T 37.2 C.",
    "Metformin 500 mg PO BID; atorvastatin 40 mg qHS.",
    "Follow up in 2 weeks, sooner if symptoms worsen.",
    "HbA1c 7.9% (was 8.4% three months ago).",
    "WBC 11.2, Hgb 10.9, Plt 245, Na 138, K 4.1, Cr 1.02.",
    "ICD-10 E11.9, I10; CPT 99214.",
    "Pt has Parkinson's disease and a history of Hodgkin lymphoma.",
    "Glasgow Coma Scale 15, Apgar 9 at 5 minutes.",
    "Started on Tylenol 1 g q6h PRN and Lipitor 20 mg daily.",
    "Room 412, bed B; transferred to ward 6 at shift change.",
    "Ordered 3 units PRBC; transfuse over 2 hours each.",
    "Weight 82.5 kg, height 176 cm, BMI 26.6.",
    "EF 35-40% on echo; moderate MR.",
    "Dose reduced from 10 mg to 5 mg daily for 7 days.",
    "No acute distress. Lungs clear bilaterally. Abdomen soft, non-tender.",
    "Wound 3 x 2 cm, clean, granulating.",
    "Pain 4/10, improved from 7/10 yesterday.",
    "Take 1 tablet every 8 hours with food.",
    "Pt walked 150 m with a frame, 2 rests.",
    "Version 2.14.3 of the app crashed twice.",
    "Step 3 of 5 completed; 12 items remaining.",
    "The study enrolled 1,245 participants across 38 sites.",
    "Smoker, 20 pack-years, quit 5 years ago.",
    "INR 2.4 on warfarin 5 mg; recheck in one week.",
    "Cholesterol 5.2 mmol/L, LDL 3.1 mmol/L.",
    "Order #4821 shipped in 3 boxes.",
    "Thanks, see you soon!",
    "ok sounds good",
    "She prefers tea over coffee and enjoys gardening.",
    "Treated per Bell's palsy protocol; Babinski negative.",
    "MRI of the L-spine: L4-L5 disc bulge.",
    "COVID-19 PCR negative; influenza A positive.",
    "Aged 45, non-smoker, drinks 2 units a week.",
    "A 67-year-old man with COPD and CHF.",
    "Insulin glargine 18 units at night, lispro per sliding scale.",
    "Temp 38.4, given paracetamol 1 g at 2 am.",
    "Creatinine trending down: 2.1 -> 1.6 -> 1.3.",
    "Discussed with the team; plan unchanged.",
]


def _address_pieces(g: WildGen, loc: str, sep: str) -> list[tuple[str, str | None, str]]:
    f = g.fakers[loc]
    street, city, zip_ = g.street(loc), g.city(loc), g.postcode(loc)
    S, C, Z = (street, "STREET_ADDRESS", loc), (city, "LOCATION", loc), (zip_, "ZIP_CODE", loc)
    if loc in ("en_US", "en_AU"):
        st = f.state_abbr() if hasattr(f, "state_abbr") else "NSW"
        return [S, (sep, None, ""), C, (", " if loc == "en_US" else " ", None, ""), (st, None, ""), (" ", None, ""), Z]
    if loc == "en_IN":
        return [S, (sep, None, ""), C, (" - ", None, ""), Z]
    if loc == "en_GB":
        return [S, (sep, None, ""), C, (" ", None, ""), Z]
    if loc == "pt_BR":
        return [S, (sep, None, ""), C, (" - ", None, ""), (f.estado_sigla(), None, ""), (", CEP ", None, ""), Z]
    return [S, (sep, None, ""), Z, (" ", None, ""), C]


class _Sentence:
    def __init__(self, g: WildGen, loc: str):
        self.g, self.loc = g, loc
        self.people: dict[int, tuple[str, str, str]] = {}

    def person(self, n: int) -> tuple[str, str, str]:
        if n not in self.people:
            loc = self.loc if n == 1 or self.g.rng.random() < 0.7 else self.g.pick(LOCALES)
            first, last = self.g.person(loc)
            self.people[n] = (first, last, loc)
        return self.people[n]

    def resolve(self, kind: str, n: int) -> list[tuple[str, str | None, str]]:
        g, loc = self.g, self.loc
        first, last, ploc = self.person(n) if kind in _PERSON_KINDS else ("", "", loc)
        if kind == "name":
            mid = f" {g.pick(string.ascii_uppercase)}." if g.rng.random() < 0.1 else ""
            return [(f"{first}{mid} {last}", "PERSON", "full")]
        simple = {
            "first": (first, "PERSON", "first"), "last": (last, "PERSON", "surname"),
            "first_lc": (first.lower(), "PERSON", "lower"), "last_lc": (last.lower(), "PERSON", "lower"),
            "name_lc": (f"{first} {last}".lower(), "PERSON", "lower"), "last_uc": (last.upper(), "PERSON", "upper"),
            "first_uc": (first.upper(), "PERSON", "upper"),
        }  # fmt: skip
        if kind in simple:
            return [simple[kind]]
        if kind == "email":
            return [(g.email(first, last), "EMAIL_ADDRESS", "")]
        if kind in ("phone", "fax"):
            v, sub = g.phone(loc)
            return [(v, "PHONE_NUMBER", sub if kind == "phone" else "fax")]
        if kind == "address":
            return _address_pieces(g, loc, g.pick([", ", ", ", "\n"]))
        return [self._other(kind, first, last)]

    def _other(self, kind: str, first: str, last: str) -> tuple[str, str | None, str]:
        g, loc = self.g, self.loc
        if kind == "title":
            return (g.pick(["Dr.", "Dr", "Mr.", "Mrs.", "Ms", "Herr", "Frau", "Prof."]), None, "")
        if kind == "county":
            return (g.pick([f"{g.fakers['en_US'].last_name()} County", f"County {g.fakers['en_GB'].last_name()}",
                            g.fakers[loc].city() + " district"]), "LOCATION", "county")  # fmt: skip
        if kind == "weekday":
            return (g.pick(WEEKDAYS), "DATE_TIME", "weekday")
        if kind in ("date", "dob"):
            v, sub = g.date_text(*((1925, 2012) if kind == "dob" else (2015, 2025)))
            return (v, "DATE_TIME", sub)
        if kind == "time":
            v, sub = g.time_text()
            return (v, "DATE_TIME", "time " + sub)
        fixed = {
            "street": lambda: (g.street(loc), "STREET_ADDRESS", loc), "city": lambda: (g.city(loc), "LOCATION", "city"),
            "zip": lambda: (g.postcode(loc), "ZIP_CODE", loc), "org": lambda: (g.org(loc), "ORGANIZATION", ""),
            "hospital": lambda: (g.pick(HOSPITAL_SHAPES).format(city=g.city(loc), last=g.person(loc)[1]), "ORGANIZATION", "hospital"),
            "ssn": lambda: (g.ssn(), "US_SSN", ""), "iban": lambda: (g.iban(loc), "IBAN_CODE", loc),
            "nhs": lambda: (g.nhs_number(), "HEALTH_PLAN_ID", "nhs"), "vin": lambda: (g.vin(), "VEHICLE_ID", "vin"),
            "plate": lambda: (g.plate(loc), "VEHICLE_ID", "plate " + loc),
        }  # fmt: skip
        if kind in fixed:
            return fixed[kind]()
        typed = {"card": ("CREDIT_CARD", g.card), "natid": ("NATIONAL_ID", lambda: g.national_id(loc)),
                 "mrn": ("MEDICAL_RECORD_NUMBER", g.mrn), "hpid": ("HEALTH_PLAN_ID", g.health_plan),
                 "account": ("ACCOUNT_NUMBER", g.account), "license": ("LICENSE_NUMBER", g.license),
                 "serial": ("DEVICE_ID", g.serial), "url": ("URL", lambda: g.url(first or "pat", last or "doe")),
                 "ip": ("IP_ADDRESS", g.ip), "age90": ("AGE_OVER_89", g.age90), "idnum": ("ID_NUMBER", g.other_id)}  # fmt: skip
        if kind not in typed:
            raise ValueError(f"unknown placeholder {kind}")
        t, fn = typed[kind]
        v, sub = fn()
        return (v, t, sub)


_PERSON_KINDS = frozenset({"name", "first", "last", "first_lc", "last_lc", "name_lc", "last_uc", "first_uc",
                           "email", "url"})  # fmt: skip
_PLACEHOLDER = re.compile(r"\{([a-z_0-9]+)(?::(\d))?\}")


def build_wild_corpus(n: int, seed: int) -> list[dict]:
    """``[{"text", "spans": [[start, end, type, subtype]], "style", "locale"}]``, one in ten without PII."""
    g = WildGen(seed)
    out = []
    weights = [4 if loc == "en_US" else 1 for loc in LOCALES]
    for i in range(n):
        if i % 10 == 9:
            out.append({"text": g.pick(NO_PII), "spans": [], "style": "no_pii", "locale": ""})
            continue
        style, tpl = TEMPLATES[i % len(TEMPLATES)] if i < 2 * len(TEMPLATES) else g.pick(TEMPLATES)
        loc = g.rng.choices(LOCALES, weights)[0]
        sent = _Sentence(g, loc)
        text, spans, pos = "", [], 0
        for m in _PLACEHOLDER.finditer(tpl):
            text += tpl[pos : m.start()]
            for value, typ, sub in sent.resolve(m.group(1), int(m.group(2) or 1)):
                if typ is not None:
                    spans.append([len(text), len(text) + len(value), typ, sub])
                text += value
            pos = m.end()
        text += tpl[pos:]
        out.append({"text": text, "spans": spans, "style": style, "locale": loc})
    return out


if __name__ == "__main__":
    import json
    import sys

    for item in build_wild_corpus(int(sys.argv[1]) if len(sys.argv) > 1 else 40, seed=7):
        print(json.dumps(item, ensure_ascii=False))
