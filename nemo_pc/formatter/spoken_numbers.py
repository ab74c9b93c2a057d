"""The spoken words of numbers, dates and amounts, for cutting text into chunks and classing spans."""

# Spoken words that can continue a number, a date or an amount ("seventeen | fifty three", "two | point five"): a
# chunk boundary between two of them would cut one entity in two (e.g. 1753 read as 17 and 53).
_UNITS = "zero oh one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"
_MORE = "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million"
_ORDINALS = "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth twentieth thirtieth"
_JOINERS = "billion trillion point and a dollars dollar cents cent percent th st nd rd"
NUMBER_WORDS = frozenset(f"{_UNITS} {_MORE} {_ORDINALS} {_JOINERS}".split())
