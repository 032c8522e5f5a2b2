"""The SQLite store's tables (``sqlite.SQLiteStore``) and the query that reads a class.

classes: one row per class (the teacher's credential as a hash, the pinned model and
prompt as JSON, the current step and question); questions: each question as it was asked
(a ``records.Snapshot`` as JSON); students; answers: one row per (question, student), a
new answer replacing the old; hits: the rate limits' counters (one fixed window per key).
Deleting a class deletes its questions, students and answers (foreign keys).
"""

SCHEMA = """
CREATE TABLE IF NOT EXISTS classes(code TEXT PRIMARY KEY, teacher TEXT NOT NULL,
  pinned TEXT NOT NULL, step INTEGER NOT NULL, question INTEGER, ended INTEGER NOT NULL,
  created REAL NOT NULL, expires REAL NOT NULL, version INTEGER NOT NULL, title TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS classes_expire ON classes(expires);
CREATE TABLE IF NOT EXISTS questions(code TEXT NOT NULL REFERENCES classes ON DELETE CASCADE,
  id INTEGER NOT NULL, key TEXT NOT NULL, snapshot TEXT NOT NULL, revealed INTEGER NOT NULL,
  PRIMARY KEY(code, id));
CREATE TABLE IF NOT EXISTS students(code TEXT NOT NULL REFERENCES classes ON DELETE CASCADE,
  id TEXT NOT NULL, nickname TEXT NOT NULL, hidden INTEGER NOT NULL, PRIMARY KEY(code, id));
CREATE TABLE IF NOT EXISTS answers(code TEXT NOT NULL, question INTEGER NOT NULL,
  student TEXT NOT NULL, value REAL NOT NULL, at REAL NOT NULL,
  PRIMARY KEY(code, question, student),
  FOREIGN KEY(code, question) REFERENCES questions(code, id) ON DELETE CASCADE);
CREATE TABLE IF NOT EXISTS hits(key TEXT PRIMARY KEY, start REAL NOT NULL,
  count INTEGER NOT NULL);
"""
CLASS_ROW = ("SELECT c.code, c.pinned, c.step, c.question, c.ended, c.created, c.expires, "
             "c.version, coalesce(q.revealed, 0), c.title, c.teacher FROM classes c "
             "LEFT JOIN questions q ON q.code = c.code AND q.id = c.question "
             "WHERE c.code = ? AND c.expires > ?")
STATEMENTS = [s for s in SCHEMA.split(";") if s.strip()]
