"""tb-02: media/small.png exists, is 100 pixels wide and keeps the aspect ratio; made by the resize tool."""

from PIL import Image

from _common import called


def check(trajectory, workspace, tool_log):
    path = workspace / "media" / "small.png" if workspace else None
    if path is None or not path.is_file():
        return [0, 0, int(called(tool_log, "images", "resize"))]
    with Image.open(path) as img:
        width, height = img.size
    return [1, int(width == 100), int(called(tool_log, "images", "resize"))]
