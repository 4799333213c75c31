"""Real-browser check of the course's slide decks: `make browser-check` runs it after the notebooks
(not collected by pytest).

Opens each deck that `labkit slides` built (file://, offline: reveal.js, require.js and MathJax sit
beside the decks) in Debian's chromium through playwright and, per deck, counts its slides and
visits every one, counting the slides whose content overflows the slide (taller or wider than the
slide's own size, or a printed table wider than its box), the images that did not load, any
formula MathJax could not typeset, the slides that show a picture and the placeholders of live
widgets. Screenshots of the first slide and of each overflowing one go to --shots. Exit 1 if a deck
has no slide, an overflow, a broken figure, or fewer slides with a picture than its stops' stored
outputs hold pictures (a placeholder standing where a PNG is stored).

    python tests/slides_check.py [--decks build/slides] [--chromium /usr/bin/chromium]
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
MEASURE = """(sizes) => {
  const s = Reveal.getCurrentSlide();
  const pres = [...s.querySelectorAll('pre')].filter(p => p.scrollWidth > p.clientWidth + 1).length;
  const imgs = [...s.querySelectorAll('img')].filter(i => !(i.complete && i.naturalWidth > 0)).length;
  const shown = [...s.querySelectorAll('img')].filter(i => i.complete && i.naturalWidth > 0).length;
  return {tall: s.scrollHeight > sizes.height + 1, wide: s.scrollWidth > sizes.width + 1, pres, imgs, shown,
          placeholder: s.innerText.includes(PLACEHOLDER), merror: s.querySelectorAll('mjx-merror').length,
          text: s.innerText.slice(0, 80)};
}""".replace("PLACEHOLDER", json.dumps("(a live widget or interactive figure: run"))


def stored_pictures(path: Path) -> int:
    """How many pictures the stored outputs of a deck's stops hold (image/png), from the notebooks the
    deck was built from: session-1.html is session 1's English deck, session-1.zh-CN.html its Chinese."""
    from labkit.course.route import ROUTE, session_stops
    from labkit.course.slides import stop_parts

    session, _, lang = path.stem.removeprefix("session-").partition(".")
    folder = ROOT / "notebooks"
    n = 0
    for s in session_stops(session):
        if ROUTE[s].notebook is None:
            continue
        for kind, x in stop_parts(ROUTE[s].notebook, ROUTE[s].shown, folder, folder / lang if lang else None):
            if kind != "markdown":
                n += sum("image/png" in o.get("data", {}) for o in x.outputs)
    return n


def check_deck(page, path: Path, shots: Path) -> dict:
    page.goto(path.resolve().as_uri())
    page.wait_for_function("window.Reveal && Reveal.isReady()", timeout=60_000)
    page.wait_for_function("!window.MathJax || !MathJax.startup || MathJax.startup.promise", timeout=60_000)
    page.evaluate("() => MathJax.startup.promise")
    sizes = page.evaluate("() => ({width: Reveal.getConfig().width, height: Reveal.getConfig().height})")
    total = page.evaluate("() => Reveal.getTotalSlides()")
    over, broken, pictures, placeholders = [], [], 0, 0
    for k in range(total):
        page.evaluate(f"() => Reveal.slide({k})")
        m = page.evaluate(MEASURE, sizes)
        if m["tall"] or m["wide"] or m["pres"]:
            over.append({"slide": k + 1, **m})
            if len(over) <= 5:
                page.screenshot(path=str(shots / f"{path.stem}-{k + 1}.png"))
        if m["imgs"] or m["merror"]:
            broken.append({"slide": k + 1, **m})
        pictures += m["shown"] > 0
        placeholders += m["placeholder"]
        if k == 0:
            page.screenshot(path=str(shots / f"{path.stem}-1.png"))
    stored = stored_pictures(path)
    problems = ([f"{len(over)} slide(s) overflow: {[o['slide'] for o in over]}"] if over else []) + \
               ([f"{len(broken)} slide(s) with a broken figure or formula: {[b['slide'] for b in broken]}"]
                if broken else []) + ([] if total else ["no slides"]) + \
               ([f"{pictures} slide(s) show a picture, the stops' stored outputs hold {stored}"] if pictures < stored else [])
    return {"deck": path.name, "slides": total, "overflowing": len(over), "with_pictures": pictures,
            "stored_pictures": stored, "placeholders": placeholders, "details": over + broken, "problems": problems}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    ap.add_argument("--decks", default=str(ROOT / "build" / "slides"))
    ap.add_argument("--shots", default=str(ROOT / "build" / "browser" / "slides"))
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    decks = sorted(Path(args.decks).glob("session-*.html"))
    if not decks:
        print(f"no decks in {args.decks}: run `make slides` first", file=sys.stderr)
        return 2
    shots = Path(args.shots)
    shots.mkdir(parents=True, exist_ok=True)
    results = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=args.chromium, args=FLAGS, headless=True)
        for deck in decks:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            try:
                r = check_deck(page, deck, shots)
            except Exception as e:                          # report, then go on to the next deck
                r = {"deck": deck.name, "slides": 0, "problems": [f"{type(e).__name__}: {e}"]}
            results.append(r)
            print(json.dumps({k: v for k, v in r.items() if k != "details"}), flush=True)
            page.close()
        browser.close()
    (shots / "results.json").write_text(json.dumps(results, indent=1))
    failed = [r for r in results if r["problems"]]
    print(f"slides check: {len(results) - len(failed)}/{len(results)} decks passed, "
          f"{sum(r['slides'] for r in results)} slides")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
