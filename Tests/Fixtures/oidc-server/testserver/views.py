import json

from django.urls import reverse
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
