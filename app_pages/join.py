"""Join: a student's page in a class session, made for a phone (see gptviz.app.classroom)."""

from gptviz.app.classroom.student import join_page

join_page()
