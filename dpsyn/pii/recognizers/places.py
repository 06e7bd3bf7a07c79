"""Street addresses and postcodes (HIPAA Safe Harbor class B: geographic subdivisions smaller
than a state).

* :class:`StreetAddressRecognizer` (``STREET_ADDRESS``): the shapes streets are written in
  across Europe, the Americas, Australia and India: house number first with an English street
  type (``221B Baker Street``, ``08063 Swanson Pines``, ``157, Rai Ganj``), a street name ending
  in its type followed by the number (``Paffrathstraße 95``, ``Hannukselankatu 1``,
  ``Bäckgatan 573``, ``Helsingørmotorenvej 691``, ``Annemijnbaan 30``), a type word first
  (``Rua do Arenque 1634``, ``12 rue Lambert``, ``Via Roma 12``, ``ulica Witosa 57``,
  ``Plaza Amancio Agullo 73``), each with an optional unit (``Apt. 595``, ``Flat 3``,
  ``Piso 4``) and an optional postcode and town after it (``, 62762 Bochum``, ``, Springfield,
  IL 62704``, ``\\nLeeds LS1 4AP``). Street type words are the USPS suffix list and the common
  types of 14 countries (a street written without any type word is not found).
* :class:`PostcodeRecognizer` (``ZIP_CODE``): postcodes after a US state or Australian
  territory (``IL 62704``), UK, Canadian and Dutch postcodes by shape, ZIP+4, Brazilian,
  Portuguese and Polish shapes, country-prefixed codes (``D-10115``), and any postcode after a
  label ("zip", "postcode", "PLZ", "CEP", ...).
"""

from __future__ import annotations

from presidio_analyzer import Pattern, PatternRecognizer

from dpsyn.pii.recognizers.base import LabelledValueRecognizer, TablePatternRecognizer

__all__ = ["PostcodeRecognizer", "StreetAddressRecognizer", "SubdivisionRecognizer", "postcode_label_recognizer"]

_EN_TYPES = (
    "Street|St|Avenue|Ave|Av|Road|Rd|Lane|Ln|Drive|Dr|Boulevard|Blvd|Court|Ct|Place|Pl|Terrace|Ter|Way|Circle|Cir|Crescent"
    "|Cres|Close|Cl|Parade|Pde|Highway|Hwy|Square|Sq|Trail|Trl|Parkway|Pkwy|Row|Mews|Grove|Gr|Gardens|Gdns|Walk|Hill"
    "|Green|Alley|Aly|Arcade|Bay|Bend|Bluffs?|Branch|Bridge|Brooks?|Burg|Bypass|Camp|Canyon|Cape|Causeway|Center|Centre"
    "|Commons?|Corners?|Course|Coves?|Creek|Crest|Crossing|Crossroad|Curve|Dale|Dam|Divide|Estates?|Expressway"
    "|Extension|Falls?|Ferry|Fields?|Flats?|Fords?|Forest|Forges?|Forks?|Fort|Freeway|Gateway|Glens?|Greens|Groves|Harbou?r"
    "|Haven|Heights|Hollow|Inlet|Islands?|Isle|Junction|Keys?|Knolls?|Lakes?|Land|Landing|Lights?|Loaf|Locks?|Lodge|Loop"
    "|Mall|Manors?|Meadows?|Mills?|Mission|Motorway|Mount|Mountains?|Neck|Orchard|Oval|Overpass|Parks?|Pass|Passage|Path"
    "|Pike|Pines?|Plains?|Plaza|Points?|Ports?|Prairie|Radial|Ramp|Ranch|Rapids?|Rest|Ridges?|River|Roads|Route|Run"
    "|Shoals?|Shores?|Skyway|Springs?|Spurs?|Squares|Station|Stravenue|Stream|Streets|Summit|Throughway|Trace|Track"
    "|Trafficway|Trailer|Tunnel|Turnpike|Underpass|Unions?|Valleys?|Viaduct|Views?|Villages?|Ville|Vista|Wall|Ways|Wells?"
    "|Esplanade|Quay|Wharf|Promenade|Rise|Vale|Chase|Gate|End|Colonnade|Concourse|Glade|Circuit|Approach|Broadway"
    "|Cliffs?|Stairs|Steps|Range|Retreat|Brae|Outlook|Link|Reach|Wynd|Crossway|Quays?|Strip|Grange|Meander|Pocket|Ramble"
    "|Nagar|Marg|Ganj|Chowk|Colony|Bagh|Puram|Layout|Enclave|Vihar|Peth|Sector"
)
_SUFFIX_TYPES = (
    "straße|strasse|str\\.|weg|gasse|platz|allee|ring|damm|ufer|pfad|steig|chaussee|markt|graben|hof|berg|tie|katu|kuja"
    "|polku|väylä|kaari|rinne|piha|bulevardi|tori|raitti|gatan|gata|vägen|väg|gränden|gränd|stigen|stig|backen|backe"
    "|torget|platsen|leden|plan|gade|vej"
    "|vænget|allé|stræde|torv|straat|laan|gracht|plein|kade|singel|dijk|steeg|baan|pad|dreef|wal|park|boulevard|bulevar"
)
_PREFIX_TYPES = (
    "rue|avenue|av\\.|avda\\.?|boulevard|bd|chemin|impasse|allée|quai|cours|via|viale|piazza|piazzale|corso|vicolo|largo"
    "|strada|contrada|borgo|rotonda|calle|avenida|plaza|paseo|camino|carrer|carretera|ronda|glorieta|pasaje|callejón"
    "|urbanización|travesía|rúa|rua|travessa|alameda|praça|estrada|rodovia|viela|vila|setor|esplanada|quadra|ladeira"
    "|ulica|ul\\.|aleja|al\\.|plac|osiedle|os\\.|place|route|morro|feira|jardim|loteamento|núcleo|passarela|pátio"
    "|recanto|residencial|sítio|trecho|trevo|vereda|viaduto|chácara|condomínio|conjunto|fazenda|favela|lagoa|incrocio"
    "|canale|lungomare|traversa|salita|pasadizo|rambla|senda|vía|cañada|polígono|acceso|bulevar|plazuela|riera|gran\\s+vía"
    "|vial|cuesta|c\\.|pl\\.|distrito|sector|barrio|colonia|passeig|carrera|diagonal|transversal|estação|parque|aeroporto|praia"
)
# prefix types that are also ordinary words: only with a house number after them
_AMBIGUOUS_PREFIX = {"via", "place", "route", "plaza", "largo", "corso", "cours", "strada", "camino", "ronda", "vila", "al\\.",
                     "os\\.", "ul\\.", "borgo", "quadra", "bd", "av\\.", "avda\\.?", "setor", "feira", "jardim", "trecho",
                     "trevo", "conjunto", "canale", "senda", "acceso", "sítio", "recanto", "residencial", "morro", "vial",
                     "cuesta", "c\\.", "pl\\.", "distrito", "sector", "barrio", "colonia", "carrera", "diagonal", "parque"}  # fmt: skip
_UP = "A-ZÀ-ÖØ-ÞĀ-ŽŁŚŻ"
_WORD = rf"[{_UP}][\w'’.\-]*"
_NUM = r"\d{1,5}[A-Za-z]?(?:\s?[-/]\s?\d{1,4}[A-Za-z]?)?"
_PARTICLE = r"(?:de|da|do|dos|das|del|della|delle|dei|di|du|des|la|le|les|el|los|las|d'|l'|von|van|der|den|y|e)"
_UNIT = (r"(?:,?\s*(?:(?i:apt|apartment|suite|ste|unit|flat|floor|fl|piso|puerta|wohnung|whg|appartamento|interno|int|piano|scala"
         r"|apto|bloco|dept|dpto|escalera|esc|andar|lok|room|rm|bldg|building)\.?\s*#?\s*[\w\-]{1,6}|\d{1,2}[ºª°]\s?[A-Za-z]?))")
_POSTCODE = (r"(?:\d{5}-\d{3,4}|\d{4}-\d{3}|\d{2}-\d{3}|\d{3}\s\d{2}|[1-9]\d{3}\s?[A-Z]{2}|[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2}"
             r"|[A-Z]\d[A-Z]\s?\d[A-Z]\d|\d{4,6})")
_CITY = rf"[{_UP}][\w'’\-]*(?:[ \-](?:{_PARTICLE}\s)?[{_UP}(][\w'’()\-]*){{0,3}}"
_TAIL = (rf"(?:[,\n]\s*(?:(?:[A-Z]{{1,2}}-)?{_POSTCODE}\s+{_CITY}"
         rf"|{_CITY}(?:,?\s+[A-Z]{{2,3}})?,?\s+{_POSTCODE}|{_CITY}\s*-\s*{_POSTCODE}|{_CITY}\s*-\s*[A-Z]{{2}},\s*(?:CEP\s*)?{_POSTCODE}))?")


class StreetAddressRecognizer(PatternRecognizer):
    """Street addresses in many countries' formats (see the module docstring), scored 0.6."""

    ENTITY = "STREET_ADDRESS"

    def __init__(self, supported_language: str = "en"):
        unambiguous = "|".join(t for t in _PREFIX_TYPES.split("|") if t not in _AMBIGUOUS_PREFIX)
        number = r"\d{1,6}[A-Za-z]?(?:[-/]\d{1,4}[A-Za-z]?)?,?\s+"
        lead = rf"(?:(?i:flat|apt|apartment|unit|suite|studio|h\.?\s?no\.?)\.?\s*[\w\-]{{1,5}},?\s+(?:{number})?|{number})"
        patterns = [
            ("number first, English type",
             rf"(?<![\w/.\-]){lead}(?:{_WORD}\s+){{0,3}}{_WORD}?\s*\b(?:{_EN_TYPES})s?\b\.?{_UNIT}{{0,2}}{_TAIL}"),
            ("name ending in its type, then number",
             rf"(?<![\w])(?=[{_UP}])(?:{_WORD}[ \-]){{0,3}}[\w'’.\-]*?(?i:{_SUFFIX_TYPES})\s+{_NUM}{_UNIT}{{0,2}}{_TAIL}"),
            ("type first, then name and number",
             rf"(?<![\w])(?:\d{{1,5}}(?:\s?(?i:bis|ter))?,?\s+)?(?i:{_PREFIX_TYPES})\s+(?:{_PARTICLE}\s*)*[\w'’.\-]+(?:\s+(?:{_PARTICLE}\s+)?{_WORD}){{0,4}},?\s*(?:n[º°o]\.?\s*)?{_NUM}{_UNIT}{{0,2}}{_TAIL}"),
            ("type first, name without number",
             rf"(?<![\w])(?:\d{{1,5}},?\s+)?(?i:{unambiguous})\s+(?:{_PARTICLE}\s*)*{_WORD}(?:\s+(?:{_PARTICLE}\s+)?{_WORD}){{0,3}}{_UNIT}{{0,2}}"),
        ]  # fmt: skip
        super().__init__(
            supported_entity=self.ENTITY,
            patterns=[Pattern(n, r, 0.6) for n, r in patterns],
            context=["address", "lives", "live", "street", "adresse", "dirección", "indirizzo", "endereço", "adres"],
            supported_language=supported_language,
            global_regex_flags=0,
            name="StreetAddressRecognizer",
        )


_STATES = ("AL|AK|AZ|AR|CA|CO|CT|DE|DC|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|NJ|NM|NY|NC|ND"
           "|OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY|PR|VI|GU|NSW|VIC|QLD|SA|TAS|ACT|NT")


class PostcodeRecognizer(TablePatternRecognizer):
    """Postcodes by shape and position (see the module docstring)."""

    ENTITY = "ZIP_CODE"
    CONTEXT = ["zip", "postcode", "postal", "plz", "cep", "cap", "address", "city", "town", "postnummer", "postinumero"]
    PATTERNS = [
        ("after a state", rf"(?<=\b(?:{_STATES})\.?,?\s)\d{{4,5}}(?:-\d{{4}})?\b", 0.6),
        ("UK", r"\b(?:[A-Z]{1,2}\d[A-Z\d]?|GIR)\s?\d[ABD-HJLNP-UW-Z]{2}\b", 0.5),
        ("Canada", r"\b[ABCEGHJ-NPRSTVXY]\d[ABCEGHJ-NPRSTV-Z][ \-]?\d[ABCEGHJ-NPRSTV-Z]\d\b", 0.5),
        ("Netherlands", r"\b[1-9]\d{3}\s?(?!SA|SD|SS)[A-Z]{2}\b(?=\s+[A-Z]|\s*$|,)", 0.45),
        ("ZIP+4 / Brazil", r"(?<![\d\-])\d{5}-\d{3,4}(?![\d\-])", 0.5),
        ("Portugal", r"(?<![\d\-])\d{4}-\d{3}(?![\d\-])", 0.4),
        ("Poland", r"(?<![\d\-])\d{2}-\d{3}(?![\d\-])", 0.2),
        ("country prefix", r"\b(?:D|F|A|CH|I|E|P|NL|B|L|DK|S|FI|N|PL|CZ)-\d{4,5}\b", 0.5),
        ("digits before a town", rf"(?<![\w\-.,/])\d{{4,5}}(?=\s+{_WORD}(?:\s|,|\.|$))", 0.1),
    ]


def postcode_label_recognizer(supported_language: str = "en") -> LabelledValueRecognizer:
    """A postcode written after its label: ``Postcode: 88-216``, ``ZIP 62704``, ``CEP 36083-778``."""
    labels = (r"zip(?:\s*code)?|post\s*code|postal\s*code|plz|cep|cap|code\s+postal|c[óo]digo\s+postal|kod\s+pocztowy"
              r"|postnummer|postinumero|pin\s*code|pincode|c\.p\.")  # fmt: skip
    return LabelledValueRecognizer(entity="ZIP_CODE", labels=labels, score=0.6, min_digits=2, name="LabelledPostcodeRecognizer",
                                   supported_language=supported_language)  # fmt: skip


class SubdivisionRecognizer(PatternRecognizer):
    """Counties, districts and similar subdivisions named with their type word (``Orange County``,
    ``County Wicklow``, ``Piteå district``, ``Landkreis Kassel``), as ``LOCATION``."""

    def __init__(self, supported_language: str = "en"):
        types = r"County|Co\.|District|Shire|Parish|Borough|Province|Municipality|Township|Canton|Prefecture|Oblast"
        patterns = [
            ("name then type", rf"\b{_WORD}(?:\s+{_WORD})?\s+(?i:{types})\b", 0.5),
            ("type then name", rf"\b(?:County|Landkreis|Kreis|Département|Provincia|Comté|Gmina|Powiat|Kommune|Kunta)\s+{_WORD}", 0.5),
        ]  # fmt: skip
        super().__init__(supported_entity="LOCATION", patterns=[Pattern(n, r, s) for n, r, s in patterns],
                         supported_language=supported_language, global_regex_flags=0, name="SubdivisionRecognizer")  # fmt: skip
