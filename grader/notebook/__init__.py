"""Notebooks: reading them and finding the cells the grader cares about (:mod:`.read`), releasing
the learners' copies from the solutions (:mod:`.release`) and executing one top to bottom with
nbval in a child process (:mod:`.execute`, :mod:`._nbval_plugin`). Stands on :mod:`grader.sandbox`.

Imports nothing itself, so that ``-p grader.notebook._imports`` runs before nbformat is imported.
"""
