"""Reports drawn with plotly, without Streamlit: used by the command line (``python3 -m dpcore
reproduce-thesis``) and by the pages (download buttons). dpcore stays plain Python + NumPy/pandas
and makes the data; this package only draws it and writes self-contained HTML."""
