"""The Flow map: :mod:`.flowmap` (the page's view options, maps row and tables), :mod:`.layers`
(folium flow lines, zones, legends), :mod:`.choropleth` (coloured zone areas) and
:mod:`.leaflet_assets` (Leaflet's files served by the app itself, so maps work offline)."""
