"""What kind of process this is: a ``benchlang`` command's own (``cli.entry`` sets
``command``) or a program that imports benchlang as a library (a notebook, a test, the API).

A command may change what holds for its whole process, such as leaving its start-up objects
out of the garbage collector's walks (``app.blas_threads``); a library must not: a program's
objects frozen when it first calls benchlang would never be collected when they form cycles.
"""

command = False
