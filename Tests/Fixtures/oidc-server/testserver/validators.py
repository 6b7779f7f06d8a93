from oauth2_provider.oauth2_validators import OAuth2Validator


class Validator(OAuth2Validator):
    """Adds the standard profile claims to ID tokens and userinfo (by scope: email, profile), and `groups` (the
    user's Django groups), a claim of no standard scope that providers commonly add (usher's `custom_claims`),
    released with the profile scope."""

    oidc_claim_scope = {**OAuth2Validator.oidc_claim_scope, "groups": "profile"}

    def get_additional_claims(self, request):
        user = request.user
        return {
            "email": user.email,
            "email_verified": True,
            "name": f"{user.first_name} {user.last_name}".strip() or user.username,
            "given_name": user.first_name,
            "family_name": user.last_name,
            "preferred_username": user.username,
            "groups": sorted(user.groups.values_list("name", flat=True)),
        }
