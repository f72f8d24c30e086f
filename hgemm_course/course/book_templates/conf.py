"""Sphinx settings of the course website; ``hgemm-course book`` copies this file into the source tree
it generates (hgemm_course/course/book.py) and builds that tree."""

project = "hgemm-course"
author = "the hgemm-course authors"
html_title = "hgemm-course"
# copyright, the footer's "Copyright (c) YEAR HOLDER", is LICENSE's line: hgemm-course book sets it from there

extensions = ["myst_nb"]
nb_execution_mode = "off"          # the notebooks' committed outputs are the figures: nothing runs, no GPU
nb_merge_streams = True            # a cell's prints as one block, not one per flush

html_theme = "furo"                # navigation sidebar, previous/next links, a contents box on every page
html_copy_source = False           # the site shows the course, not Sphinx's copies of its sources
html_show_sourcelink = False
pygments_style = "default"         # Pygments' own colours: a diff's removed lines red, added green
html_favicon = "favicon.svg"       # without one the browser asks for /favicon.ico, which the site has not
smartquotes = False                # the prose quotes commands: "--record" stays two hyphens
html_static_path = ["_static"]
html_css_files = ["site.css"]      # wide tables scroll inside the window (book_templates/site.css)
