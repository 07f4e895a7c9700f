"""The Classroom: :mod:`.view` (the teacher's and the student's screens), :mod:`.component` (the
phone as a Streamlit component) and ``js/`` (the reviewed randomisers that run in the browser)."""
