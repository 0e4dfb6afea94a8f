"""The language server (``benchlang lsp``): the checker's diagnostics, hover, completion,
definitions, references, the outline, formatting and ``auto`` hints in any LSP editor.

A front end like the CLI, one layer below it (``benchlang.cli.lsp`` starts it): it reads specs
through ``lang`` and ``app``, never the other way round. docs/lsp.md.
"""
