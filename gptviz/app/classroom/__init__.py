"""The class session's pages: the teacher's controls in the Lesson (``teacher``), the
projector's live count and histogram (``projector``), the students' Join page
(``student``), what a browser keeps (``browser``) and the store they share (``shared``)."""
