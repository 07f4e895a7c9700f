"""What every page shares: :mod:`.data` (the current dataset, bundled or uploaded), :mod:`.state`
(session-state keys), :mod:`.controls` and :mod:`.viewstate` (run settings kept in the URL),
:mod:`.runs` and :mod:`.memo` (cached releases and sweeps), :mod:`.budget` (memory per session),
:mod:`.charts`, :mod:`.panels` and :mod:`.widgets` (drawing), :mod:`.huge` (very large domains),
:mod:`.heavy_hitters` (PEM/TreeHist sections used by Explore, Tradeoffs and Learn),
:mod:`.navigation` (the pages and the app's menu), :mod:`.safe` (untrusted text made inert) and
:mod:`.startup` (once per process). Nothing here belongs to one screen only.
"""
