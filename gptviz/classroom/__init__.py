"""The class session's engine: join codes, the teacher's credential, what a class records
(its pinned model and prompt, each question as it was asked, every student's answer) and
the store that keeps it, behind one small interface (``store.ClassStore``).

SQLite is the default store (``sqlite.SQLiteStore``, a file under ``paths.data_dir()``);
a shared store for several server processes implements the same interface. Nothing here
imports streamlit or plotly: the pages in ``gptviz.app.classroom`` draw what this keeps.
"""
