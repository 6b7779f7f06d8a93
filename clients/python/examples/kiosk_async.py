"""A kiosk with asyncio: follows the active user and keeps a token for them (docs/python.md)."""

import asyncio

import usher


async def main() -> None:
    async with usher.AsyncClient() as client:
        async with client.subscribe(["active_user_changed"]) as events:
            print("subscribed", flush=True)
            async for event in events:  # a "reconnected" event after usherd restarted
                if event.user_id:  # None: nobody is logged in now
                    token = await client.access_token(min_valid=300, user_id=event.user_id)
                    print("now serving", event.user_id, "with a token valid for", token.expires_in, "s", flush=True)


asyncio.run(main())
