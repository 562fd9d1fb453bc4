"""moto's S3 server, with the one guarantee of S3 the index's commit relies on: a conditional create is atomic.

``python tests/moto_s3_server.py -H 127.0.0.1 -p PORT`` takes moto's own arguments. moto checks
``If-None-Match: *`` and then stores the object as two separate steps on its request threads, so two concurrent
``PUT``\\s of one new key can both succeed there (seen in CI, and reproduced with a short GIL switch interval),
where S3 lets exactly one succeed. Serializing moto's ``put_object`` handler restores S3's behaviour; the index's
commit protocol (``storage_handler.stats.index.versions``) is what the tests then exercise, not moto's race.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from moto.s3.responses import S3Response
from moto.server import main

_put_object = S3Response.put_object
_lock = threading.Lock()


def _atomic_put_object(self: S3Response) -> Any:
    with _lock:
        return _put_object(self)


S3Response.put_object = _atomic_put_object  # type: ignore[method-assign]

if __name__ == "__main__":
    main(sys.argv[1:])
