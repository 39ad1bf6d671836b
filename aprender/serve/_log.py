"""The server's one logger, whose every record is written as inert text.

A log line quotes what others chose: a model's name (a folder or ``model-settings.json``), an
error that quotes a model file, a request's path (``%1b`` decodes to ESC). Written raw, such
text is a program for the terminal that shows the log (``ESC ] 0 ;`` sets its title, OSC 52
writes the clipboard) and a newline in it forges a log line of its own. Every record of
:data:`log` is therefore rewritten, before any handler formats it, into one line through
:func:`aprender._display.printable` (cut to :data:`aprender._display.MAX_MESSAGE_CHARS`), and
its traceback, if any, into its frames' lines and one escaped line per exception message.
"""

from __future__ import annotations

import logging

from aprender._display import MAX_MESSAGE_CHARS, clip, printable, traceback_text

__all__ = ["log"]


class _Inert(logging.Filter):
    """Rewrites each record's message (and traceback) as escaped text; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = printable(clip(record.getMessage(), MAX_MESSAGE_CHARS))
        if record.exc_info:
            text += "\n" + traceback_text(record.exc_info[1])
            record.exc_info, record.exc_text = None, None
        record.msg, record.args = text, ()
        return True


#: The logger of ``aprender serve`` (``aprender.serve``): import this, never ``logging.getLogger``.
log = logging.getLogger("aprender.serve")
log.addFilter(_Inert())
