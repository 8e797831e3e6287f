"""tcinspect's Model Context Protocol server (``tcinspect mcp``): the questions tcinspect answers, as tools.

``tools`` says what each tool is: a CLI command run for the server, answering with the document that command
prints as JSON. ``server`` speaks the protocol over stdio with the official SDK (the ``mcp`` extra) and lists
saved and cached reports as resources. docs/agents.md shows both from an agent's side.
"""
