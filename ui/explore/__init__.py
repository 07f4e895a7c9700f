"""Explore's own sections: :mod:`.heatmap` (the OD heat map: true, released, difference). The
release panels Explore shares with other pages are in :mod:`ui.components`."""
