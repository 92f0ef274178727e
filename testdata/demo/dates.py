"""Seeded generator of human-written dates and their ISO form, for the demo
models (character-level date normalisation).

Conventions (so every input has exactly one answer):
- dates lie in 1950-01-01 .. 2049-12-31; a two-digit year yy means 20yy when
  yy < 50, else 19yy;
- numeric month-first formats with slashes are US style (M/D/Y); dotted and
  dashed day-first formats are European (D.M.Y); year-first is Y/M/D.

Train/held-out split: every calendar date is assigned to the held-out set with
probability HELDOUT_FRACTION by a seeded draw, so held-out dates never occur
in training, in any format.
"""

import datetime
import random

PAD, SOS, EOS, UNK = "<pad>", "<sos>", "<eos>", "<unk>"
SPECIALS = [PAD, SOS, EOS, UNK]

FIRST = datetime.date(1950, 1, 1)
LAST = datetime.date(2049, 12, 31)
HELDOUT_FRACTION = 0.1

MONTHS = ["January", "February", "March", "April", "May", "June", "July",
          "August", "September", "October", "November", "December"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def ordinal(n):
    if 10 <= n % 100 <= 20:
        suffix = "th"
    else:
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return "%d%s" % (n, suffix)


def _mon(d):
    return MONTHS[d.month - 1][:3]


def _month(d):
    return MONTHS[d.month - 1]


def _dow(d):
    return DAYS[d.weekday()]


def _yy(d):
    return "%02d" % (d.year % 100)


# Each format: (name, function(date) -> string, may change letter case).
FORMATS = [
    ("ord_of_month_year", lambda d: "%s of %s %d" % (ordinal(d.day), _month(d), d.year), True),
    ("the_ord_of_month", lambda d: "the %s of %s, %d" % (ordinal(d.day), _month(d), d.year), True),
    ("mon_d_yy", lambda d: "%s %d, %s" % (_mon(d), d.day, _yy(d)), True),
    ("mon_d_yyyy", lambda d: "%s %d, %d" % (_mon(d), d.day, d.year), True),
    ("month_ord_yyyy", lambda d: "%s %s, %d" % (_month(d), ordinal(d.day), d.year), True),
    ("month_d_yyyy", lambda d: "%s %d, %d" % (_month(d), d.day, d.year), True),
    ("month_d_yyyy_nocomma", lambda d: "%s %d %d" % (_month(d), d.day, d.year), True),
    ("d_mon_yyyy", lambda d: "%d %s %d" % (d.day, _mon(d), d.year), True),
    ("d_month_yyyy", lambda d: "%d %s %d" % (d.day, _month(d), d.year), True),
    ("dd_mon_yyyy_dash", lambda d: "%02d-%s-%d" % (d.day, _mon(d), d.year), True),
    ("dow_month_d_yyyy", lambda d: "%s, %s %d, %d" % (_dow(d), _month(d), d.day, d.year), True),
    ("dw_d_mon_yyyy", lambda d: "%s %d %s %d" % (_dow(d)[:3], d.day, _mon(d), d.year), True),
    ("dow_d_month_yyyy", lambda d: "%s %d %s %d" % (_dow(d), d.day, _month(d), d.year), True),
    ("mon_ord_yyyy", lambda d: "%s %s %d" % (_mon(d), ordinal(d.day), d.year), True),
    ("us_mm_dd_yyyy", lambda d: "%02d/%02d/%d" % (d.month, d.day, d.year), False),
    ("us_m_d_yyyy", lambda d: "%d/%d/%d" % (d.month, d.day, d.year), False),
    ("us_m_d_yy", lambda d: "%d/%d/%s" % (d.month, d.day, _yy(d)), False),
    ("eu_dd_mm_yyyy_dot", lambda d: "%02d.%02d.%d" % (d.day, d.month, d.year), False),
    ("eu_d_m_yy_dot", lambda d: "%d.%d.%s" % (d.day, d.month, _yy(d)), False),
    ("ymd_slash", lambda d: "%d/%d/%d" % (d.year, d.month, d.day), False),
    ("iso", lambda d: d.isoformat(), False),
    ("compact", lambda d: "%d%02d%02d" % (d.year, d.month, d.day), False),
]


def iso(d):
    return d.isoformat()


def render(d, rng):
    """One random human-written form of date d."""
    _, fn, casey = FORMATS[rng.randrange(len(FORMATS))]
    s = fn(d)
    if casey:
        r = rng.random()
        if r < 0.2:
            s = s.lower()
        elif r < 0.3:
            s = s.upper()
    return s


def all_dates():
    n = (LAST - FIRST).days + 1
    return [FIRST + datetime.timedelta(days=i) for i in range(n)]


def split_dates(seed):
    """(train_dates, heldout_dates), disjoint, decided by a seeded draw."""
    rng = random.Random("split-%d" % seed)
    train, held = [], []
    for d in all_dates():
        (held if rng.random() < HELDOUT_FRACTION else train).append(d)
    return train, held


def examples(dates, n, seed):
    """n (source, target) pairs drawn from dates, seeded."""
    rng = random.Random("examples-%d" % seed)
    out = []
    for _ in range(n):
        d = dates[rng.randrange(len(dates))]
        out.append((render(d, rng), iso(d)))
    return out


def source_chars():
    """Every character any format can produce (both cases of letters)."""
    chars = set("0123456789 ,./-")
    for w in MONTHS + DAYS + ["st", "nd", "rd", "th", "of", "the"]:
        chars.update(w.lower())
        chars.update(w.upper())
    return sorted(chars)


def source_vocab():
    return SPECIALS + source_chars()


def target_vocab():
    return SPECIALS + list("0123456789-")


def encode(s, vocab_index):
    unk = vocab_index[UNK]
    return [vocab_index.get(ch, unk) for ch in s]


if __name__ == "__main__":
    r = random.Random(0)
    for i in range(len(FORMATS)):
        d = datetime.date(2021, 3, 3)
        print("%-22s %s" % (FORMATS[i][0], FORMATS[i][1](d)))
    print(len(source_vocab()), "source tokens,", len(target_vocab()), "target tokens")
