#!/usr/bin/env python3
"""Builds demo/pages.tsv: a small sample of crawled-looking news pages for the README's demo.

The article texts are English Wikinews stories (CC BY 2.5, Wikinews contributors; see
ATTRIBUTION.md), taken from ../shared/data/textcorpus. Each story is rendered into the page
templates of several fictional news sites (navigation, ads, scripts, footers written here), with
small wire-style edits, so the copies are near duplicates that exact comparison misses. Other
stories appear once, in the same frames, as distractors that must not match.

Run from the repository root:  python3 demo/make-sample.py ../shared/data/textcorpus/docs.tsv.gz
Deterministic: the same input gives the same output.
"""
import gzip
import html
import random
import re
import sys

STORIES = [37913, 37919, 37945, 37950, 37962, 37969, 37979, 37989]   # near-duplicate groups
SINGLES = [37909, 37916, 37920, 37955, 37980, 37995]                 # one page each

SITES = [
    ("riverton-ledger.example", "The Riverton Ledger", "#1a3d6d"),
    ("daily-harbor.example", "Daily Harbor", "#7a1f1f"),
    ("northgate-times.example", "Northgate Times", "#2e5e2e"),
    ("plainsview-herald.example", "Plainsview Herald", "#4b3a6b"),
    ("metro-wire.example", "Metro Wire", "#333333"),
    ("coastal-courier.example", "Coastal Courier", "#0f5a6b"),
]

NAV = ["Home", "World", "U.S.", "Politics", "Business", "Tech", "Sports", "Opinion", "Weather",
       "Obituaries", "Classifieds", "Subscribe", "Log in"]
ADS = ["Lose 10 lbs fast with this one weird trick!", "Mortgage rates at record lows - compare now",
       "Hot singles in your area", "Top 10 beaches you must visit this summer",
       "Click here for your free credit score", "New SUVs at unbeatable prices"]
FOOTER = ["About us", "Contact", "Careers", "Privacy policy", "Terms of use", "Advertise",
          "Site map", "RSS feeds", "Newsletters", "Copyright 2008 All rights reserved"]


def unescape_copy(field):
    """Undoes PostgreSQL COPY text escaping."""
    return re.sub(r'\\(.)', lambda m: {'t': '\t', 'n': '\n', 'r': '\r'}.get(m.group(1), m.group(1)), field)


def load(path, wanted):
    """Reads the wanted (id -> (title, body)) rows of docs.tsv.gz."""
    out = {}
    with gzip.open(path, 'rt', encoding='utf-8') as f:
        for line in f:
            parts = line.rstrip('\n').split('\t', 3)
            if int(parts[0]) in wanted:
                out[int(parts[0])] = (unescape_copy(parts[2]), unescape_copy(parts[3]))
    return out


def paragraphs(body):
    """Splits a body into paragraphs."""
    return [p.strip() for p in re.split(r'\n\s*\n|\n', body) if p.strip()]


def edit(rng, title, paras):
    """Applies wire-style edits: truncation, a byline/dateline, a trailer, a changed headline."""
    paras = list(paras)
    if len(paras) > 4 and rng.random() < 0.5:
        paras = paras[: max(3, len(paras) - rng.randint(1, 2))]
    if rng.random() < 0.5:
        paras[0] = rng.choice(["WASHINGTON (AP) -- ", "LONDON (Reuters) - ", "By Staff Writer. "]) + paras[0]
    if rng.random() < 0.5:
        paras.append(rng.choice(["Copyright 2008 The Associated Press. All rights reserved.",
                                 "Reporting by news staff; editing by the desk."]))
    if rng.random() < 0.4:
        title = "UPDATE 1-" + title
    return title, paras


def page(rng, site, title, paras):
    """Renders an article into a site's frame."""
    host, name, color = site
    nav = "".join(f'<li><a href="/{n.lower()}">{html.escape(n)}</a></li>' for n in NAV)
    ads = "".join(f'<div class="ad"><a href="http://ads.example/{i}">{html.escape(a)}</a></div>'
                  for i, a in enumerate(rng.sample(ADS, 3)))
    foot = " | ".join(f'<a href="/{f.split()[0].lower()}">{html.escape(f)}</a>' for f in FOOTER)
    body = "\n".join(f"<p>{html.escape(p)}</p>" for p in paras)
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{html.escape(title)} - {name}</title>'
            f'<style>body{{font-family:Georgia}} .ad{{border:1px solid #ccc}} h1{{color:{color}}}</style>'
            f'<script>var _track = {{site: "{host}", section: "news"}}; if (a < b && c) {{ load(); }}</script>'
            f'</head><body><div id="masthead"><h2>{name}</h2><ul class="nav">{nav}</ul></div>'
            f'<div id="sidebar">{ads}<h3>Most read</h3><ol><li>Weather: sunny spells</li>'
            f'<li>Local team wins again</li><li>Traffic update</li></ol></div>'
            f'<div id="content"><h1>{html.escape(title)}</h1>{body}</div>'
            f'<!-- comments widget disabled -->'
            f'<div id="footer">{foot}</div></body></html>')


def copy_escape(s):
    """Escapes a field for PostgreSQL COPY text format."""
    return s.replace('\\', '\\\\').replace('\t', '\\t').replace('\n', '\\n').replace('\r', '\\r')


def main():
    rng = random.Random(20081)
    docs = load(sys.argv[1], set(STORIES + SINGLES))
    rows = []
    for sid in STORIES:
        title, body = docs[sid]
        for site in rng.sample(SITES, rng.randint(3, 5)):
            t, ps = edit(rng, title, paragraphs(body))
            rows.append((site[0], sid, t, page(rng, site, t, ps)))
    for sid in SINGLES:
        title, body = docs[sid]
        site = rng.choice(SITES)
        rows.append((site[0], sid, title, page(rng, site, title, paragraphs(body))))
    rng.shuffle(rows)
    with open("demo/pages.tsv", "w", encoding="utf-8") as f:
        for i, (host, sid, title, doc) in enumerate(rows, 1):
            f.write("\t".join([str(i), host, str(sid), copy_escape(title), copy_escape(doc)]) + "\n")
    with open("demo/ATTRIBUTION.md", "w", encoding="utf-8") as f:
        f.write("# Attribution\n\nThe article texts in `pages.tsv` are from English Wikinews and are licensed\n"
                "under the Creative Commons Attribution 2.5 licence "
                "(https://creativecommons.org/licenses/by/2.5/), by Wikinews contributors. They were\n"
                "reformatted into paragraphs and lightly edited (truncated, datelines and credit lines\n"
                "added, headlines prefixed) to simulate syndicated copies. The page frames, site names,\n"
                "navigation and ads are fictional and written for this project.\n\nStories used:\n\n")
        for sid in STORIES + SINGLES:
            f.write(f"- \"{docs[sid][0]}\", Wikinews\n")
    print(f"wrote {len(rows)} pages")


if __name__ == "__main__":
    main()
