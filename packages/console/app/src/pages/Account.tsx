import { CredentialsApi } from "@hostplane/api/git/GitApi"
import { IdentityApi } from "@hostplane/api/identity/IdentityApi"
import { useState } from "preact/hooks"
import { clientOf } from "../api.ts"
import { DangerButton, Empty, ErrorNote, Field, Loaded, time, useAction, useLoad } from "../ui.tsx"

const api = clientOf(IdentityApi, CredentialsApi)

export default function Account() {
  const me = useLoad(() => api().identity.me(), [])
  const tokens = useLoad(() => api().credentials.listTokens(), [])
  const keys = useLoad(() => api().credentials.listKeys(), [])
  const [tokenName, setTokenName] = useState("")
  const [created, setCreated] = useState<string | undefined>(undefined)
  const createToken = useAction()
  const [publicKey, setPublicKey] = useState("")
  const addKey = useAction()
  return (
    <>
      <h1>Account</h1>
      <Loaded data={me.data} problem={me.problem}>
        {(data) => (
          <dl class="facts">
            <dt>Name</dt>
            <dd>{data.user.name ?? "—"}</dd>
            <dt>Email</dt>
            <dd>{data.user.email ?? "—"}</dd>
            <dt>User id</dt>
            <dd>
              <code>{data.user.id}</code>
            </dd>
          </dl>
        )}
      </Loaded>
      <h2>Personal access tokens</h2>
      <p class="muted">For git over HTTPS and for scripts: `Authorization: Bearer` with your roles.</p>
      {created !== undefined && (
        <p role="status">
          New token, shown once: <code>{created}</code>
        </p>
      )}
      <Loaded data={tokens.data} problem={tokens.problem}>
        {(data) =>
          data.items.length === 0 ? (
            <Empty>No token yet: create one below for git or a script.</Empty>
          ) : (
            <table>
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Created</th>
                  <th>Expires</th>
                  <th>Last used</th>
                  <th>
                    <span class="muted">Action</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.items.map((token) => (
                  <tr key={token.id}>
                    <td>{token.name}</td>
                    <td>{time(token.createdAt)}</td>
                    <td>{time(token.expiresAt)}</td>
                    <td>{time(token.lastUsedAt)}</td>
                    <td>
                      {token.revokedAt === null ? (
                        <DangerButton
                          label="Revoke"
                          title={`Revoke the token ${token.name}?`}
                          detail={<p>Scripts and git remotes using it are refused at once.</p>}
                          action={() => api().credentials.revokeToken({ params: { tokenId: token.id } })}
                          done={() => void tokens.reload()}
                        />
                      ) : (
                        <span class="muted">revoked {time(token.revokedAt)}</span>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loaded>
      <form
        class="inline"
        onSubmit={(event) => {
          event.preventDefault()
          void createToken
            .run(() => api().credentials.createToken({ payload: { name: tokenName } as never }))
            .then((made) => {
              if (made !== undefined) {
                setCreated(made.body.token)
                setTokenName("")
                void tokens.reload()
              }
            })
        }}
      >
        <Field
          label="Name"
          name="token-name"
          required
          value={tokenName}
          onInput={(e) => setTokenName(e.currentTarget.value)}
        />
        <button type="submit" disabled={createToken.busy}>
          Create token
        </button>
      </form>
      <ErrorNote problem={createToken.problem} />
      <h2>SSH keys</h2>
      <Loaded data={keys.data} problem={keys.problem}>
        {(data) =>
          data.items.length === 0 ? (
            <Empty>No SSH key yet: add your public key (`~/.ssh/id_ed25519.pub`) to push over SSH.</Empty>
          ) : (
            <table>
              <thead>
                <tr>
                  <th>Title</th>
                  <th>Fingerprint</th>
                  <th>Added</th>
                  <th>
                    <span class="muted">Action</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.items.map((key) => (
                  <tr key={key.id}>
                    <td>{key.title}</td>
                    <td>
                      <code>{key.fingerprint}</code>
                    </td>
                    <td>{time(key.createdAt)}</td>
                    <td>
                      <DangerButton
                        label="Delete"
                        title={`Delete the SSH key ${key.title}?`}
                        detail={<p>Pushes signed with it are refused at once.</p>}
                        action={() => api().credentials.removeKey({ params: { keyId: key.id } })}
                        done={() => void keys.reload()}
                      />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loaded>
      <form
        class="inline"
        onSubmit={(event) => {
          event.preventDefault()
          void addKey
            .run(() => api().credentials.addKey({ payload: { publicKey } }))
            .then((added) => {
              if (added !== undefined) {
                setPublicKey("")
                void keys.reload()
              }
            })
        }}
      >
        <Field
          label="Public key"
          name="public-key"
          required
          value={publicKey}
          onInput={(e) => setPublicKey(e.currentTarget.value)}
        />
        <button type="submit" disabled={addKey.busy}>
          Add key
        </button>
      </form>
      <ErrorNote problem={addKey.problem} />
    </>
  )
}
