"""Command-line tools that ship with mxrs.

Layout
------
im2rec
    ``im2rec``: image lists (.lst) from a folder of images, and RecordIO files (.rec/.idx)
    of the images of a list, as MXNet 1.9.1's ``tools/im2rec.py`` makes them.
"""
