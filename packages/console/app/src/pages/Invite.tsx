import { InvitesApi } from "@hostplane/api/orgs/OrgsApi"
import { clientOf } from "../api.ts"
import { DevLogin } from "../devLogin.tsx"
import { enc, href, navigate } from "../router.tsx"
import { devLoginOn, hostSignedIn, readSession } from "../session.ts"
import { ErrorNote, forgetRoles, Loaded, time, useAction, useLoad } from "../ui.tsx"

const api = clientOf(InvitesApi)

export default function Invite({ params }: { readonly params: Record<string, string> }) {
  const token = params["token"]!
  const view = useLoad(() => api().invites.view({ params: { token } }), [token])
  const accept = useAction()
  const signedIn = readSession() !== undefined || hostSignedIn()
  return (
    <>
      <h1>Invitation</h1>
      <Loaded data={view.data} problem={view.problem}>
        {(invite) => (
          <>
            <p>
              You are invited to join <strong>{invite.orgName}</strong> ({invite.orgSlug}) as {invite.role}.
            </p>
            <dl class="facts">
              <dt>State</dt>
              <dd>{invite.state}</dd>
              <dt>Expires</dt>
              <dd>{time(invite.expiresAt)}</dd>
            </dl>
            {invite.state === "pending" &&
              (signedIn ? (
                <button
                  type="button"
                  disabled={accept.busy}
                  onClick={() =>
                    void accept
                      .run(() => api().invites.accept({ params: { token } }))
                      .then((accepted) => {
                        if (accepted !== undefined) {
                          forgetRoles()
                          navigate(`/orgs/${enc(invite.orgSlug)}`)
                        }
                      })
                  }
                >
                  Accept invitation
                </button>
              ) : (
                <p>
                  <button
                    type="button"
                    onClick={() => {
                      location.href = href(`/v1/auth/idp/start?redirect=${enc(location.href)}`)
                    }}
                  >
                    Sign in
                  </button>{" "}
                  to accept.
                </p>
              ))}
            {invite.state === "pending" && !signedIn && devLoginOn() && <DevLogin />}
            <ErrorNote problem={accept.problem} />
          </>
        )}
      </Loaded>
    </>
  )
}
