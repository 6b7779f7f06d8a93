"""What no well-behaved client sends: every message gets a clear error (or, past the size limit, an error and the
end of the connection), the daemon keeps serving, and nothing it holds is lost."""

from __future__ import annotations

import threading
from typing import Any

from conftest import Definition, Raw, varlink_path


def test_a_message_without_nul_for_16_mib_is_refused_and_the_daemon_serves_on(daemon: Any, session: Any) -> None:
    user = session.Login(credentials={"type": "anonymous"})["user"]
    flood = Raw(varlink_path(daemon))

    def send() -> None:
        try:
            flood.socket.sendall(b'{"method":"io.usher.Session.Hello","parameters":{"x":"' + b"a" * (16 << 20))
        except OSError:
            pass  # the daemon closed the connection once the message passed the limit: expected

    sender = threading.Thread(target=send)
    sender.start()
    refused = flood.receive()
    sender.join()
    assert refused is not None and refused["error"] == "io.usher.Session.LineTooLong", refused
    assert flood.receive() is None  # and the connection is closed
    flood.close()
    assert session.CurrentUser()["user"]["id"] == user["id"]


def test_bad_messages_get_errors_and_the_connection_stays_usable(raw: Raw, definition: Definition) -> None:
    cases: list[tuple[bytes, str, dict[str, Any]]] = [
        (b"not json", "io.usher.Session.InvalidRequest", {}),
        (b"[1,2,3]", "io.usher.Session.InvalidRequest", {}),
        (b'{"parameters":{}}', "io.usher.Session.InvalidRequest", {}),
        (b'{"method":42}', "io.usher.Session.InvalidRequest", {}),
        (b'{"method":"CurrentUser"}', "io.usher.Session.InvalidRequest", {}),
        (b'{"method":"io.usher.Session.CurrentUser","more":"yes"}', "io.usher.Session.InvalidRequest", {}),
        (b"[" * 1000 + b"]" * 1000, "io.usher.Session.InvalidRequest", {}),
        (b'{"method":"io.usher.Session.CurrentUser","parameters":{"seat":"\xff"}}', "io.usher.Session.InvalidRequest", {}),
        (b'{"method":"io.usher.Session.Nothing"}', "org.varlink.service.MethodNotFound", {"method": "io.usher.Session.Nothing"}),
        (b'{"method":"io.example.Other.Ping"}', "org.varlink.service.InterfaceNotFound", {"interface": "io.example.Other"}),
        (b'{"method":"org.varlink.service.Nothing"}', "org.varlink.service.MethodNotFound", {"method": "org.varlink.service.Nothing"}),
        (b'{"method":"io.usher.Session.SwitchUser","parameters":{"user_id":42}}', "org.varlink.service.InvalidParameter", {"parameter": "user_id"}),
        (b'{"method":"io.usher.Session.SwitchUser","parameters":{}}', "org.varlink.service.InvalidParameter", {"parameter": "user_id"}),
        (b'{"method":"io.usher.Session.AccessToken","parameters":{"min_valid":"soon"}}', "org.varlink.service.InvalidParameter", {"parameter": "min_valid"}),
        (b'{"method":"io.usher.Session.ListUsers","parameters":[1]}', "org.varlink.service.InvalidParameter", {"parameter": "parameters"}),
        (b'{"method":"io.usher.Session.Login","parameters":{"credentials":"anonymous"}}', "org.varlink.service.InvalidParameter", {"parameter": "credentials"}),
        (b'{"method":"io.usher.Session.Hello","upgrade":true}', "org.varlink.service.InvalidParameter", {"parameter": "upgrade"}),
        (b'{"method":"org.varlink.service.GetInterfaceDescription","parameters":{"interface":1}}', "org.varlink.service.InvalidParameter", {"parameter": "interface"}),
    ]
    for message, error, parameters in cases:
        raw.send(message)
        reply = raw.receive()
        assert reply is not None, f"the connection closed after {message[:80]!r}"
        assert reply.get("error") == error, f"{message[:80]!r}: {reply}"
        if error.startswith("io.usher.Session."):
            definition.check_error(error, reply["parameters"])
        else:
            assert reply["parameters"] == parameters, f"{message[:80]!r}: {reply}"
        # Still usable: the next call is answered.
        assert "parameters" in raw.call("io.usher.Session.Hello")
