"""tb-04: the final reply gives the sample variance of 2, 4, 6, 8 (20/3) to two decimals.

This check reads the reply from a field the trajectory does not have ("answer" instead of
"final_reply"), so it raises: the demo's evaluator error."""


def check(trajectory, workspace, tool_log):
    return [int("6.67" in trajectory["answer"])]
