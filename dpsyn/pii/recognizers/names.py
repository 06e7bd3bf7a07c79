"""Names of people and organizations where NER misses them (HIPAA Safe Harbor class A).

:class:`PersonCueRecognizer` (``PERSON``) finds names by the words people write around them:

* a title or role before a name (``Dr. Okafor``, ``Mrs Kelly``, ``Herr Baum``, ``RN Helena``,
  ``wife Maria``, ``daughter Angelika``, ``NOK: ...``, ``PCP: ...``);
* a self-introduction or a greeting (``My name is ...``, ``I'm ...``, ``this is ...``,
  ``Dear ...``, ``Hi ...``, ``Regards, ...``, ``Signed: ...``), in chat also in lower case
  (``hey its rocco``, ``tell diego``, ``text silvester``);
* lists after a list label (``Present: A, B and C``, ``Founders: ...``, ``cc: lucas, wood``,
  ``on call this weekend: zarna, nidhi, max``);
* a capitalized word that opens a note and is followed by a clinical verb (``Leiva seen
  today``, ``Okafor reports ...``), and a name before "here" (``Reino Tikkanen here``).

Common words never count as a name (stop words, pronouns, roles). :class:`OrganizationRecognizer`
(``ORGANIZATION``) finds hospitals, clinics and companies by their type word (``St. Mary's
Hospital``, ``Klinikum Leipzig``, ``Huttunen Osk``, ``Tata Ltd``).
"""

from __future__ import annotations

from presidio_analyzer import Pattern, PatternRecognizer
from spacy.lang.en.stop_words import STOP_WORDS

from dpsyn.pii.recognizers.base import TablePatternRecognizer

__all__ = ["OrganizationRecognizer", "PersonCueRecognizer"]

_UP = "A-ZÀ-ÖØ-ÞĀ-ŽŁŚŻ"
_TITLES_WORDS = "dr|drs|mr|mrs|ms|miss|mx|prof|sr|sra|srta|mme|mlle|madame|monsieur|herr|frau|signor|signora|sig|rn|md|sir"
_NOT_A_NAME = (
    "the|a|an|and|or|but|if|at|in|on|to|of|for|from|with|by|as|is|are|was|were|be|been|am|it|its|this|that|these|those"
    "|he|she|they|we|you|i|me|him|her|them|us|my|your|his|our|their|who|what|here|there|now|then|so|not|no|yes|ok|okay"
    "|fine|good|great|well|sorry|back|home|done|sure|ready|free|busy|late|soon|just|also|all|everyone|guys|team|folks"
    "|mate|bro|dude|babe|lol|omg|thanks|thx|pls|please|hi|hey|hello|dear|patient|pt|doctor|nurse|mother|father|son"
    "|daughter|wife|husband|family|staff|client|resident|today|tomorrow|yesterday|going|coming|running|at|about|again"
    "|still|only|very|really|too|more|seen|will|can|could|would|should|may|might|must|shall|do|does|did|has|have|had"
    "|feeling|getting|having|being|doing|looking|trying|happy|sad|tired|sick|new|old|one|two|three|some|any|none"
)
_NOT_A_NAME += "|" + _TITLES_WORDS + "|" + "|".join(sorted(w.replace("'", "['’]") for w in STOP_WORDS if w.isascii() and w.replace("'", "").isalpha()))
_NAME = rf"(?!(?i:(?:{_NOT_A_NAME})\b))[{_UP}][\w'’\-]*[^\W\d_]"
_LOWER = rf"(?!(?:{_NOT_A_NAME})\b)[a-zà-öø-ÿ][a-zà-öø-ÿ'’\-]*[a-zà-öø-ÿ]"
_PART = r"(?:de|da|do|dos|das|del|della|di|du|van|von|der|den|ter|ten|le|la|bin|al|el|y|e)"
_FULL = rf"{_NAME}(?:\s+(?:[{_UP}]\.\s+|{_PART}\s+)?{_NAME}){{0,3}}"
_FULL_LOWER = rf"{_LOWER}(?:\s+{_LOWER})?"
_TITLES = (r"dr|drs|mr|mrs|ms|miss|mx|prof|sr|sra|srta|mme|mlle|madame|monsieur|herr|frau|signor|signora|sig|dott|dottssa"
           r"|pan|pani|nurse|sister|rn|np|pa|md|pt|sir|dame|rev|fr|attending|pcp|gp|nok|name|patient\s+name|full\s+name")
_ROLES = (r"wife|husband|son|daughter|mother|mom|mum|father|dad|brother|sister|granddaughter|grandson|grandmother"
          r"|grandfather|niece|nephew|aunt|uncle|cousin|partner|fianc[ée]e?|neighbou?r|friend|colleague|carer|caregiver"
          r"|guardian|boyfriend|girlfriend|stepson|stepdaughter|patient|client|contact|surgeon|physician|consultant|therapist")
_INTRO = (r"my\s+name\s+is|my\s+name's|i\s+am|i'm|this\s+is|it's|its|call\s+me|named|called|signed|regards|sincerely"
          r"|cheers|best|thanks|thank\s+you|thx|ta|dear|hi|hello|hey|attn|attention|per|cc|bcc|from|to|spoke\s+(?:with|to)"
          r"|seen\s+with|visited\s+by|referred\s+by|accompanied\s+by|ask|tell|text|ping|email|call|message")
_CHAT_INTRO = (r"my\s+name\s+is|i'm|im|i\s+am|this\s+is|it's|its|hey|hi|hello|tell|text|ask|ping|thx|thanks|cc|attn|per|call"
               r"|says|said")
_LIST_LABEL = (r"present|founders|authors|attendees|visitors(?:\s+today)?|cc|bcc|team|care\s+team|on\s+call|shortlisted"
               r"|participants|members|signed\s+by|witnesses|contacts|guests|staff|family|invited|speakers|panel|committee")
_SEP = r"(?:\s*[,;&/]\s*|\s+and\s+|\s+und\s+|\s+et\s+|\s+y\s+|\s+e\s+|\s+og\s+|\s+och\s+|\s+en\s+)"
_VERBS = (r"seen|reports|states|denies|presents|presented|was|is|has|had|came|called|tolerated|ambulated|says|said"
          r"|complains|feels|works|lives|arrived|returned|declined|agreed|wants|asked|reported|underwent|remains|continues")


class PersonCueRecognizer(TablePatternRecognizer):
    """Person names found by the words around them (see the module docstring)."""

    ENTITY = "PERSON"
    PATTERNS = [
        ("title or role", rf"(?<=\b(?i:{_TITLES}|{_ROLES})\.?(?:[ \t]*[:\-][ \t]*|[ \t]+)(?:{_PART}[ \t]+)?){_FULL}", 0.6),
        ("self-introduction or greeting", rf"(?<=\b(?i:{_INTRO})\s*[,:]?\s+|\b(?i:{_INTRO})\s*[,:]?\n){_FULL}", 0.5),
        ("chat, lower case", rf"(?<=\b(?:{_CHAT_INTRO})\s*[,:]?\s+){_FULL_LOWER}", 0.5),
        ("chat, lower case before a verb", rf"(?:^|(?<=\b(?:lol|omg|ok\s+so|btw|and|or|&)\s)){_FULL_LOWER}(?=\s+(?:says|said|just|texted|called|is|was|are|were|wants|asked|and|&)\b)", 0.45),
        ("all-caps name opening a record", rf"(?:^|(?<=\n))[{_UP}]{{2,}}(?:\s+[{_UP}]{{2,}}){{1,2}}(?=,)", 0.45),
        ("list", rf"(?<=\b(?i:{_LIST_LABEL})\b[^:\n]{{0,30}}:\s*)(?:{_FULL}|{_FULL_LOWER})(?:{_SEP}(?:{_FULL}|{_FULL_LOWER})){{0,8}}", 0.5),
        ("opens a note, clinical verb", rf"(?:^|(?<=[.!?:]\s))(?!(?i:(?:{_TITLES}|{_ROLES})\b)){_NAME}(?:\s+{_NAME})?(?=\s+(?i:{_VERBS})\b)", 0.45),
        ("name here", rf"(?:^|(?<=[.!?]\s)){_NAME}\s+{_NAME}(?=\s+here\b)", 0.5),
        ("surname, first name", rf"(?<=\b(?i:patient|pt|name|client|resident|insured|subscriber|guarantor)\s*:\s*)[{_UP}][{_UP}'’\-]+,\s+{_NAME}", 0.6),
    ]  # fmt: skip


_ORG_AFTER = (r"General\s+Hospital|Hospital|Medical\s+Cent(?:er|re)|Health\s+Cent(?:er|re)|Clinic|Family\s+Practice"
              r"|Children's\s+Clinic|Surgery|Infirmary|Hospice|Nursing\s+Home|Care\s+Home|Pharmacy|Laboratories|Labs"
              r"|Inc\.?|LLC|Ltd\.?|Limited|GmbH|AG|S\.?A\.?|S\.p\.A\.?|SpA|Sp\.\s?z\s?o\.o\.|Sp\.k\.|Oy|Osk|Oyj|AB|HB|KB|A/S|ApS"
              r"|B\.?V\.?|N\.?V\.?|PLC|plc|S\.?r\.?l\.?|SAS|SARL|KG|e\.V\.|Corp\.?|Corporation|Group|& Sons|and Sons|e Filhos"
              r"|et Fils|y Asociados|Ltda\.?|S\.L\.(?:N\.E)?|S\.Com\.|s\.c\.|Foundation|Trust|Associates|Partners")
_ORG_BEFORE = (r"Klinikum|Krankenhaus|Universitätsklinikum|Hôpital|Clinique|Ospedale|Policlinico|Hospital|Clínica|Sairaala"
               r"|Sjukhus|Szpital|Ziekenhuis|Fundacja|Stowarzyszenie|Spółdzielnia|Fondation")


class OrganizationRecognizer(PatternRecognizer):
    """Hospitals, clinics and companies named with their type word."""

    ENTITY = "ORGANIZATION"

    def __init__(self, supported_language: str = "en"):
        word = rf"[{_UP}][\w'’.&\-]*"
        patterns = [
            ("name then type", rf"(?<![\w])(?:St\.?\s+|Saint\s+)?{word}(?:[ ,]+(?:and\s+|&\s+|e\s+|y\s+|et\s+)?{word}){{0,3}}\s+(?:{_ORG_AFTER})(?![\w])", 0.5),
            ("type then name", rf"\b(?:{_ORG_BEFORE})\s+{word}(?:\s+{word}){{0,2}}", 0.5),
        ]  # fmt: skip
        super().__init__(
            supported_entity=self.ENTITY,
            patterns=[Pattern(n, r, s) for n, r, s in patterns],
            supported_language=supported_language,
            global_regex_flags=0,
            name="OrganizationRecognizer",
        )
