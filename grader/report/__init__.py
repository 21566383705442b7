"""Reports of one learner's grading: the terminal table, Gradescope JSON, JUnit XML and Markdown
(:mod:`.render`), the self-contained HTML feedback page (:mod:`.feedback`) and GitHub Classroom's
points (:mod:`.classroom_points`), all from :mod:`grader.results`.
"""
