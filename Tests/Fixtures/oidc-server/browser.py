#!/usr/bin/env python3
"""A scripted person at a browser, for usher's tests against the OpenID Connect test server.

    browser.py authorize URL USERNAME PASSWORD [--deny] [--print-redirect]
        Opens the authorization URL, logs in, approves (or declines) on the consent page, then follows the
        provider's redirect to the client's loopback listener. Prints the listener's HTTP status (with
        --print-redirect: the redirect URL instead, without following it).
    browser.py device VERIFICATION_URI USER_CODE USERNAME PASSWORD [--deny]
        Opens the verification page, logs in, enters the user code and accepts (or denies) the device.
    browser.py userinfo URL ACCESS_TOKEN
        Calls the userinfo endpoint with the token, as an API would; prints the HTTP status and the body.

Exits non-zero, with the reason on stderr, when a page is not what a person would expect.
"""

import sys
from html.parser import HTMLParser
from urllib.parse import urljoin

import requests

TIMEOUT = 10


class Forms(HTMLParser):
    """Every form's inputs, by form: [(action, {name: value})]."""

    def __init__(self):
        super().__init__()
        self.forms = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.forms.append((attrs.get("action"), {}))
        elif tag == "input" and self.forms and attrs.get("name") and attrs.get("type") != "submit":
            self.forms[-1][1][attrs["name"]] = attrs.get("value") or ""


def forms(response):
    parser = Forms()
    parser.feed(response.text)
    return parser.forms


def fail(message, response=None):
    detail = f" (HTTP {response.status_code} at {response.url})" if response is not None else ""
    sys.exit(f"browser: {message}{detail}")


def log_in(session, response, username, password):
    """Fills the login form the provider redirected to, and returns the page after it."""
    if "/accounts/login/" not in response.url:
        return response
    found = forms(response)
    if not found:
        fail("no login form", response)
    fields = found[0][1]
    fields.update({"username": username, "password": password})
    after = session.post(response.url, data=fields, timeout=TIMEOUT, headers={"Referer": response.url})
    if "/accounts/login/" in after.url:
        fail("the login was refused", after)
    return after


def authorize(url, username, password, deny, print_redirect):
    session = requests.Session()
    page = log_in(session, session.get(url, timeout=TIMEOUT), username, password)
    consent = [fields for _, fields in forms(page) if "client_id" in fields]
    if not consent:
        fail("no consent form", page)
    fields = dict(consent[0])
    if not deny:
        fields["allow"] = "Authorize"
    answer = session.post(page.url, data=fields, timeout=TIMEOUT, allow_redirects=False)
    location = answer.headers.get("Location")
    if answer.status_code not in (301, 302, 303) or not location:
        fail("the consent did not redirect", answer)
    if print_redirect:
        print(location)
        return
    # The client's loopback listener: a plain GET, as a browser would do.
    redirect = requests.get(location, timeout=TIMEOUT)
    print(redirect.status_code)


def device(verification_uri, user_code, username, password, deny):
    session = requests.Session()
    page = log_in(session, session.get(verification_uri, timeout=TIMEOUT), username, password)
    code_forms = [fields for _, fields in forms(page) if "user_code" in fields]
    if not code_forms:
        fail("no user code form", page)
    fields = dict(code_forms[0])
    fields["user_code"] = user_code
    confirm = session.post(page.url, data=fields, timeout=TIMEOUT, headers={"Referer": page.url})
    if "device-confirm" not in confirm.url:
        fail("the user code was not accepted", confirm)
    fields = dict(forms(confirm)[0][1])
    fields["action"] = "deny" if deny else "accept"
    done = session.post(confirm.url, data=fields, timeout=TIMEOUT, headers={"Referer": confirm.url})
    if done.status_code != 200:
        fail("the device was not confirmed", done)
    print(done.status_code)


def userinfo(url, token):
    response = requests.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)
    print(response.status_code)
    print(response.text)


if __name__ == "__main__":
    flags = ("--deny", "--print-redirect")
    arguments = [argument for argument in sys.argv[1:] if argument not in flags]
    deny = "--deny" in sys.argv
    if len(arguments) == 4 and arguments[0] == "authorize":
        authorize(arguments[1], arguments[2], arguments[3], deny, "--print-redirect" in sys.argv)
    elif len(arguments) == 3 and arguments[0] == "userinfo":
        userinfo(arguments[1], arguments[2])
    elif len(arguments) == 5 and arguments[0] == "device":
        device(arguments[1], arguments[2], arguments[3], arguments[4], deny)
    else:
        sys.exit(__doc__)
