"""The colours every chart gives the lifecycle stages, so a stage looks the same in each."""

STAGE_COLOURS = {
    "training": "#1d3557",
    "serving": "#457b9d",
    "storage": "#a8dadc",
    "data": "#e9c46a",
    "other": "#b0b0b0",
}
