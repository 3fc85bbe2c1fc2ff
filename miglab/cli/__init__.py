"""The ``miglab`` command: argument parsing, exit codes and rendering; calls into the layers below.

``miglab.cli.commands`` holds the parser and the commands of the lab; ``miglab.cli.results`` the
``results`` and ``report`` groups; ``miglab.cli.render`` the plan's text rendering."""
