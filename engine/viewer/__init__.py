"""The run viewer: a static site of a finished scoring run (leaderboard, tasks, alignment, judges).

`engine.viewer.data` gathers what the site shows from the run's files (`engine.viewer.board` its
leaderboard); `engine.viewer.site` writes it (templates and the page's scripts and styles are this package's
data).
"""
