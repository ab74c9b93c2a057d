"""Template-based synthetic sentences rich in ITN entities and mixed-case words (papers/003 §4.2, Fig. 2).

Paper 003 fills the gaps of public text with LLM-written sentences; here a seeded template grammar does the same
without a model. Every generator returns the written form and the spoken form of one entity, in the style of an
ASR transcript (lower case, numbers spelled out, digits read one by one where people read them so):

* phone numbers, credit card numbers (15 and 16 digits), SSNs, email addresses, URLs, postal addresses,
* currencies, dates, times, ordinals, and
* mixed-case names and acronyms (McDonald's, iPhone, NASA).

The written and spoken sentences are then labelled like any other text, by alignment
(:func:`nemo_pc.formatter.labels.derive_labels`).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from nemo_pc.parts.text import normalize

DIGITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
FIRST_NAMES = ("Sarah", "John", "Maria", "David", "Aisha", "Wei", "Carlos", "Emma", "Liam", "Olivia", "Noah", "Priya")
LAST_NAMES = ("Smith", "McAllister", "O'Brien", "DeVito", "Johnson", "MacDonald", "Garcia", "Nguyen", "LeBlanc")
MIXED_NAMES = (
    "iPhone",
    "McDonald's",
    "YouTube",
    "eBay",
    "JavaScript",
    "PowerPoint",
    "LinkedIn",
    "PayPal",
    "iPad",
    "GitHub",
    "OpenStreetMap",
    "WordPress",
)
ACRONYMS = ("NASA", "CEO", "FBI", "USA", "UN", "BBC", "IBM", "HR", "IT", "UK", "EU", "NATO")
STREETS = ("Industrial Drive", "Main Street", "Oak Avenue", "Maple Road", "Elm Street", "Park Lane", "Lake Boulevard")
CITIES = (
    ("Newark", "New Jersey"),
    ("Austin", "Texas"),
    ("Denver", "Colorado"),
    ("Portland", "Oregon"),
    ("Boston", "Massachusetts"),
    ("Madison", "Wisconsin"),
)
DOMAINS = ("example", "acme", "labs", "northwind", "contoso", "bluesky", "datahub")
TLDS = ("com", "org", "net", "io")
WORDS = ("info", "support", "sales", "hello", "team", "news", "jobs", "contact")

TEMPLATES: dict[str, tuple[str, ...]] = {
    "phone": ("You can reach {name} at {x}.", "Call {x} to report the problem.", "Is {x} the right number?"),
    "card": ("The card {x} was charged twice.", "She paid with a card ending in {x}, I think."),
    "ssn": ("His social security number is {x}.", "Please confirm {x} before we continue."),
    "email": ("Send the file to {x} today.", "Write to {x} if you have questions."),
    "url": ("The details are on {x}.", "Check out our website at {x} for more."),
    "address": ("The package is coming from {x}.", "{name} moved to {x} last year."),
    "money": ("Revenue reached {x} last quarter.", "The ticket costs {x}, right?", "{name} lent me {x}."),
    "date": ("The meeting is on {x}.", "On {x}, {name} signed the contract.", "Was it {x}?"),
    "time": ("The train leaves at {x}.", "Let's meet at {x} tomorrow."),
    "ordinal": ("She finished {x} in the race.", "It was the {x} time this year."),
    "mixed": ("{name} bought an {x} yesterday.", "Did {name} post it on {x}?", "The {acronym} uses {x} now."),
}


class EntitySynthesizer:
    """Seeded generator of ``(written, spoken)`` sentences; ``kinds`` picks the entity kinds."""

    def __init__(self, seed: int = 0, kinds: tuple[str, ...] | None = None) -> None:
        import inflect

        self.rng = random.Random(seed)
        self.inflect = inflect.engine()
        self.generators: dict[str, Callable[[], tuple[str, str]]] = {
            "phone": self.phone,
            "card": self.card,
            "ssn": self.ssn,
            "email": self.email,
            "url": self.url,
            "address": self.address,
            "money": self.money,
            "date": self.date,
            "time": self.time,
            "ordinal": self.ordinal,
            "mixed": self.mixed,
        }
        self.kinds = tuple(kinds or self.generators)
        unknown = set(self.kinds) - set(self.generators)
        if unknown:
            raise ValueError(f"unknown entity kinds {sorted(unknown)}; known: {sorted(self.generators)}")

    def sentences(self, count: int) -> list[tuple[str, str]]:
        """``count`` sentences, cycling through the kinds."""
        return [self.sentence(self.kinds[k % len(self.kinds)]) for k in range(count)]

    def sentence(self, kind: str) -> tuple[str, str]:
        """One sentence with an entity of ``kind``: the written form and its spoken form."""
        written_x, spoken_x = self.generators[kind]()
        name = self.rng.choice(FIRST_NAMES)
        acronym = self.rng.choice(ACRONYMS)
        template = self.rng.choice(TEMPLATES[kind])
        written = template.format(x=written_x, name=name, acronym=acronym)
        spoken = template.format(x=spoken_x, name=name, acronym=acronym)
        return written[:1].upper() + written[1:], normalize(spoken)

    def _digits(self, count: int) -> str:
        return "".join(self.rng.choice("0123456789") for _ in range(count))

    def _say_digits(self, digits: str) -> str:
        zero = self.rng.choice(("zero", "oh"))
        return " ".join(zero if d == "0" else DIGITS[int(d)] for d in digits if d.isdigit())

    def _number(self, value: int) -> str:
        return self.inflect.number_to_words(value, andword=self.rng.choice(("and", "")))

    def phone(self) -> tuple[str, str]:
        groups = [self._digits(3), self._digits(3), self._digits(4)]
        if self.rng.random() < 0.3:
            groups = ["1", "800", *groups[1:]]
        return "-".join(groups), self._say_digits("".join(groups))

    def card(self) -> tuple[str, str]:
        sizes = (4, 4, 4, 4) if self.rng.random() < 0.7 else (4, 6, 5)
        groups = [self._digits(n) for n in sizes]
        return "-".join(groups), self._say_digits("".join(groups))

    def ssn(self) -> tuple[str, str]:
        groups = [self._digits(3), self._digits(2), self._digits(4)]
        return "-".join(groups), self._say_digits("".join(groups))

    def email(self) -> tuple[str, str]:
        user = self.rng.choice((self.rng.choice(WORDS), f"{self.rng.choice(FIRST_NAMES).lower()}.smith"))
        domain, tld = self.rng.choice(DOMAINS), self.rng.choice(TLDS)
        written = f"{user}@{domain}.{tld}"
        return written, f"{user.replace('.', ' dot ')} at {domain} dot {tld}"

    def url(self) -> tuple[str, str]:
        domain, tld = self.rng.choice(DOMAINS), self.rng.choice(TLDS)
        if self.rng.random() < 0.5:
            return f"www.{domain}.{tld}", f"w w w dot {domain} dot {tld}"
        page = self.rng.choice(WORDS)
        return f"{domain}.{tld}/{page}", f"{domain} dot {tld} slash {page}"

    def address(self) -> tuple[str, str]:
        number = self.rng.randint(1, 999)
        street = self.rng.choice(STREETS)
        city, state = self.rng.choice(CITIES)
        postcode = self._digits(5)
        written = f"{number} {street} in {city}, {state} {postcode}"
        return (
            written,
            f"{self._number(number)} {street.lower()} in {city.lower()} {state.lower()} " + self._say_digits(postcode),
        )

    def money(self) -> tuple[str, str]:
        dollars = self.rng.choice((self.rng.randint(1, 99), self.rng.randint(100, 9999)))
        roll = self.rng.random()
        if roll < 0.3:
            tenths = self.rng.randint(1, 9)
            scale = self.rng.choice(("million", "billion"))
            return f"${dollars}.{tenths} {scale}", f"{self._number(dollars)} point {DIGITS[tenths]} {scale} dollars"
        if roll < 0.6:
            cents = self.rng.randint(1, 99)
            return f"${dollars}.{cents:02d}", f"{self._number(dollars)} dollars and {self._number(cents)} cents"
        return f"${dollars}", f"{self._number(dollars)} dollars"

    def _year(self, year: int) -> str:
        if 2000 <= year < 2010 or (year >= 2000 and self.rng.random() < 0.5):
            return self._number(year)
        return self.inflect.number_to_words(year, group=2).replace(",", "")

    def date(self) -> tuple[str, str]:
        month = self.rng.randrange(12)
        day = self.rng.randint(1, 28)
        year = self.rng.randint(1950, 2030)
        ordinal = self.inflect.number_to_words(self.inflect.ordinal(day))
        if self.rng.random() < 0.5:
            return f"{MONTHS[month]} {day}, {year}", f"{MONTHS[month].lower()} {ordinal} {self._year(year)}"
        return f"{MONTHS[month]} {self.inflect.ordinal(day)}", f"{ordinal} of {MONTHS[month].lower()}"

    def time(self) -> tuple[str, str]:
        hour, minute = self.rng.randint(1, 12), self.rng.choice((0, 5, 15, 30, 45, self.rng.randint(1, 59)))
        half = self.rng.choice(("AM", "PM"))
        if minute == 0:
            return f"{hour} {half}", f"{self._number(hour)} {half[0].lower()} m"
        spoken_minute = f"oh {DIGITS[minute]}" if minute < 10 else self._number(minute)
        return f"{hour}:{minute:02d} {half}", f"{self._number(hour)} {spoken_minute} {half[0].lower()} m"

    def ordinal(self) -> tuple[str, str]:
        value = self.rng.choice((self.rng.randint(1, 30), self.rng.randint(31, 199)))
        return self.inflect.ordinal(value), self.inflect.number_to_words(self.inflect.ordinal(value))

    def mixed(self) -> tuple[str, str]:
        word = self.rng.choice(MIXED_NAMES + tuple(f"{f} {s}" for f in FIRST_NAMES[:3] for s in LAST_NAMES[1:4]))
        return word, word.lower()


# Written sentences dense in the numbers of encyclopedic text. They carry no spoken form: NeMo TN reads them, like
# every other written source, so the rewriter learns numbers in the words TN (and so the test documents) uses.
NUMBER_TEMPLATES = (
    "The population of {city} was {count} in {year}.",
    "{name} was born on {date} and died in {year}.",
    "The bridge is {measure} long and was opened in {year}.",
    "Between {year} and {year2}, production rose by {percent}.",
    "The company employed about {count} people and earned {money} in {year}.",
    "The style first appeared in the {decade}, late in the {ordinal} century.",
    "The {ordinal} edition sold {count} copies.",
    "The lake covers {area} and lies {measure} above the sea.",
    "In {year}, the party won {small} of the {count} seats.",
    "The war lasted from {year} to {year2} and cost {money}.",
    "Its score of {decimal} was the best since {year}.",
    "About {percent} of the {count} residents were born abroad.",
)
UNITS = ("km", "m", "kg", "cm", "mi", "ft")


def number_sentences(count: int, seed: int = 0) -> list[str]:
    """``count`` seeded written sentences full of cardinals, years, decades, dates, decimals, percentages,
    measures, money and ordinals, in the style of Wikipedia leads."""
    import inflect

    rng = random.Random(seed)
    ordinals = inflect.engine()

    def cardinal() -> str:
        size = rng.randrange(5)
        if size == 0:
            return str(rng.randint(2, 99))
        if size == 1:
            return str(rng.randint(100, 999))
        if size == 2:
            return f"{rng.randint(1000, 99999):,}"
        if size == 3:
            return f"{rng.randint(100000, 9999999):,}"
        return f"{rng.randint(1, 99)}.{rng.randint(1, 9)} million"

    def year() -> int:
        return rng.choice((rng.randint(1800, 2030), rng.randint(1900, 2030), rng.randint(1000, 1799)))

    def date() -> str:
        month, day = rng.choice(MONTHS), rng.randint(1, 28)
        return f"{month} {day}, {year()}" if rng.random() < 0.5 else f"{day} {month} {year()}"

    def decimal() -> str:
        return f"{rng.randint(0, 99)}.{rng.randint(1, 99)}"

    sentences = []
    for _ in range(count):
        first = year()
        values = {
            "city": rng.choice(CITIES)[0],
            "name": f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}",
            "count": cardinal(),
            "small": str(rng.randint(2, 400)),
            "year": str(first),
            "year2": str(first + rng.randint(1, 40)),
            "date": date(),
            "decimal": decimal(),
            "decade": f"{rng.randrange(1700, 2030, 10)}s",
            "ordinal": ordinals.ordinal(rng.randint(1, 21)),
            "percent": f"{rng.choice((str(rng.randint(1, 99)), decimal()))}%",
            "measure": f"{rng.choice((str(rng.randint(2, 9999)), decimal()))} {rng.choice(UNITS)}",
            "area": f"{rng.randint(2, 9999)} km2",
            "money": rng.choice((f"${cardinal()}", f"${rng.randint(1, 999)}.{rng.randint(1, 9)} billion")),
        }
        sentences.append(rng.choice(NUMBER_TEMPLATES).format(**values))
    return sentences
