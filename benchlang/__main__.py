from benchlang.cli import entry

entry()
