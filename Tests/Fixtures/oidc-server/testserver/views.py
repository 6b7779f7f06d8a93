import json

from django.http import HttpResponse, JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider.oauth2_backends import get_oauthlib_core
from oauth2_provider.views.oidc import ConnectDiscoveryInfoView


class DiscoveryView(ConnectDiscoveryInfoView):
    """django-oauth-toolkit's discovery document, plus the endpoints it serves but does not list there: revocation
    (RFC 7009) and device authorization (RFC 8628), and the grants it supports (as its RFC 8414 document says).
    Keycloak, Authentik and others publish all of these in their discovery documents; clients rely on them."""

    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        data = json.loads(response.content)
        data["revocation_endpoint"] = request.build_absolute_uri(reverse("oauth2_provider:revoke-token"))
        data["device_authorization_endpoint"] = request.build_absolute_uri(
            reverse("oauth2_provider:device-authorization")
        )
        data["grant_types_supported"] = [
            "authorization_code",
            "password",
            "client_credentials",
            "refresh_token",
            "urn:ietf:params:oauth:grant-type:device_code",
        ]
        response.content = json.dumps(data)
        response["Content-Length"] = str(len(response.content))
        return response


@csrf_exempt
def delete_account(request):
    """The account-deletion endpoint that usher's `delete_user` calls (`delete_account_url`): DELETE or POST with the
    user's access token as a bearer token deletes that user, and with it every token the user holds. OpenID Connect
    defines none; providers that let users delete their accounts have one of their own like it."""
    if request.method not in ("DELETE", "POST"):
        return HttpResponse(status=405)
    valid, oauth_request = get_oauthlib_core().verify_request(request, scopes=[])
    if not valid or oauth_request.user is None:
        return JsonResponse({"error": "invalid_token"}, status=401)
    oauth_request.user.delete()
    return HttpResponse(status=204)
