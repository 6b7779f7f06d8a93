from oauth2_provider.oauth2_validators import OAuth2Validator


class Validator(OAuth2Validator):
    """Adds the standard profile claims to ID tokens and userinfo (by scope: email, profile)."""

    def get_additional_claims(self, request):
        user = request.user
        return {
            "email": user.email,
            "email_verified": True,
            "name": f"{user.first_name} {user.last_name}".strip() or user.username,
            "preferred_username": user.username,
        }
