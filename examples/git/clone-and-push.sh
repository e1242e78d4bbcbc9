#!/bin/sh
# Clone and push over smart HTTP with an access token, then over SSH with a registered key, against a local server
# started with `npm start` (embedded defaults: dev login on, API on 127.0.0.1:8080, git over SSH on 127.0.0.1:2222).
set -eu
API=${API:-http://127.0.0.1:8080}
SSH_PORT=${SSH_PORT:-2222}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
json() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }

# A session (dev login), its personal org, a project and a repository.
session=$(curl -sf -H 'content-type: application/json' -d '{"subject":"example"}' "$API/v1/auth/dev/login" | json token)
auth="Authorization: Bearer $session"
org=$(curl -sf -H "$auth" "$API/v1/me" | json slug)
curl -sf -H "$auth" -H 'content-type: application/json' -d '{"name":"example"}' "$API/v1/orgs/$org/projects" >/dev/null || true
repo=$(curl -sf -H "$auth" -H 'content-type: application/json' -d '{"name":"site"}' \
  "$API/v1/orgs/$org/projects/example/repos")
clone_url=$(echo "$repo" | json cloneUrl)

# Smart HTTP: the token is the Basic password (the user name is ignored).
token=$(curl -sf -H "$auth" -H 'content-type: application/json' -d '{"name":"example"}' "$API/v1/me/tokens" | json token)
http_url=$(echo "$API/git/$org/example/site.git" | sed "s#://#://git:$token@#")
git clone -q "$http_url" "$work/http"                      # an empty repository at first
cd "$work/http"
echo "hello" > README.md
git add README.md
git -c user.name=Example -c user.email=example@example.test commit -qm "first"
git push -q origin HEAD:main
echo "pushed over HTTP to $clone_url"

# SSH: register a key, then clone and push with it.
ssh-keygen -q -t ed25519 -N "" -f "$work/key"
curl -sf -H "$auth" -H 'content-type: application/json' \
  -d "{\"publicKey\":\"$(cat "$work/key.pub")\"}" "$API/v1/me/ssh-keys" >/dev/null
export GIT_SSH_COMMAND="ssh -i $work/key -o IdentitiesOnly=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
git clone -q "ssh://git@127.0.0.1:$SSH_PORT/$org/example/site.git" "$work/ssh"
cd "$work/ssh"
echo "more" >> README.md
git -c user.name=Example -c user.email=example@example.test commit -qam "second"
git push -q origin HEAD:main

# The ref history of both pushes.
curl -sf -H "$auth" "$API/v1/orgs/$org/projects/example/repos/site/ref-updates"
echo
