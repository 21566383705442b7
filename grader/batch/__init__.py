"""A class: grade every learner's notebooks, each in isolation, and write one gradebook.

:func:`grader.batch.run.grade_class` is the entry point; see that module for the steps.
:mod:`.variants` grades a solution's variants (the catalogue's wrong answers) the same way.
"""
