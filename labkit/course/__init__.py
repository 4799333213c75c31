"""The course: its route through the notebooks as data (route.py: which parts of which notebook each
stop of docs/course.md shows), the slide decks built from those parts (slides.py, for `labkit
slides`) and the browser libraries the decks load (vendor.py). The notebooks and the course's text
live in the lab's checkout (labkit.checkout), not in the installed package."""
