"""Messages: the pydantic models at ctxpack's boundary.

Everything public accepts plain OpenAI-style dicts as well as :class:`Message` objects; both go
through :func:`ensure_messages`, which validates them and names the index and the field of the
first problem it finds.
"""

from ._model import ROLES as ROLES
from ._model import FunctionCall as FunctionCall
from ._model import Message as Message
from ._model import Role as Role
from ._model import ToolCall as ToolCall
from ._model import content_text as content_text
from ._model import copy_value as copy_value
from ._model import detached as detached
from ._model import is_unchecked as is_unchecked
from ._model import message_objects as message_objects
from ._model import provider_of as provider_of
from ._model import stable_id as stable_id
from ._model import with_provider as with_provider
from ._owned import check_shared_empties as check_shared_empties
from ._owned import ensure_messages as ensure_messages
from ._owned import message_bytes as message_bytes
from ._owned import owned_messages as owned_messages
from ._revalidation import checked_copy as checked_copy
from ._revalidation import new_messages_checked as new_messages_checked
from ._revalidation import new_originals_checked as new_originals_checked

__all__ = [
    "FunctionCall",
    "Message",
    "ToolCall",
    "ensure_messages",
]
