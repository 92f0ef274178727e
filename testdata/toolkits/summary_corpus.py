"""Writes a synthetic summarization corpus where copying matters: long
news-like sentences about people with made-up names, places and sums,
whose summaries (one or two <t> ... </t> sentences, as OpenNMT-py's
CNN/DM recipe data marks them) must repeat those names and numbers. The
names are drawn from ~20,000 syllable combinations, so most occur once
and fall outside a vocabulary of words seen three times: a model can only
get them right by copying.

    /usr/bin/python3 summary_corpus.py OUTDIR

writes train.src/tgt (8000 pairs), valid.src/tgt (200) and test.src/tgt
(60), tokens separated by single spaces. Deterministic (seeded).
"""
import os
import random
import sys

SYL = "ka lo mi ra su te no vi da ge pa ru zo fe li ma ko si be tu ha ne ri jo wa".split()
CITIES = "paris lyon berlin madrid lisbon vienna prague oslo dublin warsaw athens rome milan zurich geneva".split()
DAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
JOBS = "farmer engineer teacher banker doctor lawyer painter chef pilot writer".split()
ORGS = "the bank|the city council|a shipping firm|the university|a car maker|the hospital|a football club|the port authority".split("|")
UNITS = "euros dollars pounds francs".split()
ITEMS = "houses boats trucks tickets horses paintings shares tractors".split()


def name(r):
    return "".join(r.choice(SYL) for _ in range(r.choice([2, 3])))


def num(r):
    return str(r.choice([r.randint(2, 99), r.randint(100, 9999), r.randint(10000, 999999)]))


def pair(r):
    who, city, day = name(r).capitalize(), r.choice(CITIES), r.choice(DAYS)
    job, org, unit, item = r.choice(JOBS), r.choice(ORGS), r.choice(UNITS), r.choice(ITEMS)
    town, n1, n2 = name(r).capitalize(), num(r), num(r)
    k = r.randrange(5)
    if k == 0:
        src = f"officials in {city} said on {day} that {who} , a {job} from {town} , had signed a contract worth {n1} {unit} with {org} after {n2} weeks of talks , according to a statement released late on {day} ."
        tgt = f"<t> {who} signs {n1} {unit} contract with {org} . </t>"
    elif k == 1:
        src = f"{who} , who has worked as a {job} in {town} for {n2} years , bought {n1} {item} at an auction in {city} on {day} , the organisers said , adding that the sale was the largest of the year ."
        tgt = f"<t> {who} buys {n1} {item} in {city} . </t> <t> the {job} has worked in {town} for {n2} years . </t>"
    elif k == 2:
        src = f"police in {town} are looking for {who} , a {n2} year old {job} , who went missing on {day} after leaving {org} in {city} with {n1} {unit} in cash , a spokesman said ."
        tgt = f"<t> police seek {who} , missing since {day} . </t> <t> the {job} left with {n1} {unit} . </t>"
    elif k == 3:
        src = f"at a meeting in {city} on {day} , {org} named {who} its new head ; the former {job} , born in {town} , takes over a staff of {n1} people and a budget of {n2} {unit} ."
        tgt = f"<t> {who} to lead {org} . </t>"
    else:
        src = f"the court in {city} ordered {org} on {day} to pay {n1} {unit} to {who} , a {job} from {town} who had sued over {n2} {item} that were never delivered ."
        tgt = f"<t> {org} must pay {who} {n1} {unit} . </t> <t> {n2} {item} were never delivered . </t>"
    return src, tgt


def main():
    out = sys.argv[1]
    r = random.Random(20261205)
    sets = {"train": 8000, "valid": 200, "test": 60}
    for part, n in sets.items():
        with open(os.path.join(out, part + ".src"), "w") as s, open(os.path.join(out, part + ".tgt"), "w") as t:
            for _ in range(n):
                a, b = pair(r)
                s.write(a + "\n")
                t.write(b + "\n")


if __name__ == "__main__":
    main()
