import { InvitesApi, MembersApi } from "@hostplane/api/orgs/OrgsApi"
import { useState } from "preact/hooks"
import { clientOf } from "../api.ts"
import {
  DangerButton,
  Empty,
  ErrorNote,
  Field,
  Loaded,
  type Role,
  Select,
  time,
  useAction,
  useLoad,
  useRole
} from "../ui.tsx"

const api = clientOf(MembersApi, InvitesApi)
const roles: ReadonlyArray<Role> = ["viewer", "member", "admin"]

const RoleEditor = (props: {
  readonly org: string
  readonly userId: string
  readonly role: string
  readonly disabled: boolean
  readonly done: () => void
}) => {
  const [role, setRole] = useState(props.role)
  const save = useAction()
  return (
    <form
      class="inline"
      onSubmit={(event) => {
        event.preventDefault()
        void save
          .run(() =>
            api().members.setRole({
              params: { orgSlug: props.org, userId: props.userId as never },
              payload: { role: role as Role }
            })
          )
          .then((member) => member !== undefined && props.done())
      }}
    >
      <Select label="Role" value={role} options={roles} disabled={props.disabled} onChange={setRole} />
      <button type="submit" class="secondary" disabled={props.disabled || save.busy || role === props.role}>
        Save
      </button>
      <ErrorNote problem={save.problem} />
    </form>
  )
}

export default function Members({ params }: { readonly params: Record<string, string> }) {
  const org = params["org"]!
  const { role: myRole, can } = useRole(org)
  const members = useLoad(() => api().members.list({ params: { orgSlug: org } }), [org])
  const invites = useLoad(
    () => (myRole === "admin" ? api().invites.list({ params: { orgSlug: org } }) : Promise.resolve({ items: [] })),
    [org, myRole]
  )
  const [email, setEmail] = useState("")
  const [role, setRole] = useState("member")
  const invite = useAction()
  return (
    <>
      <h1>Members</h1>
      <Loaded data={members.data} problem={members.problem}>
        {(data) => (
          <table>
            <thead>
              <tr>
                <th>Member</th>
                <th>Joined</th>
                <th>Role</th>
                <th>
                  <span class="muted">Action</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {data.items.map((member) => (
                <tr key={member.userId}>
                  <td>
                    {member.name ?? member.subject} <span class="muted">{member.email ?? ""}</span>
                  </td>
                  <td>{time(member.joinedAt)}</td>
                  <td>
                    <RoleEditor
                      org={org}
                      userId={member.userId}
                      role={member.role}
                      disabled={!can("admin")}
                      done={() => void members.reload()}
                    />
                  </td>
                  <td>
                    <DangerButton
                      label="Delete"
                      title={`Remove ${member.name ?? member.subject} from ${org}?`}
                      detail={<p>They lose access to every project of {org} at once.</p>}
                      disabled={!can("admin")}
                      action={() => api().members.remove({ params: { orgSlug: org, userId: member.userId } })}
                      done={() => void members.reload()}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Loaded>
      {can("admin") && (
        <>
          <h2>Invitations</h2>
          <Loaded data={invites.data} problem={invites.problem}>
            {(data) =>
              data.items.length === 0 ? (
                <Empty>No invitation yet: invite someone by email below; the link in the email brings them here.</Empty>
              ) : (
                <table>
                  <thead>
                    <tr>
                      <th>Email</th>
                      <th>Role</th>
                      <th>State</th>
                      <th>Expires</th>
                      <th>
                        <span class="muted">Action</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.items.map((item) => (
                      <tr key={item.inviteId}>
                        <td>{item.email}</td>
                        <td>{item.role}</td>
                        <td>{item.state}</td>
                        <td>{time(item.expiresAt)}</td>
                        <td>
                          {item.state === "pending" && (
                            <DangerButton
                              label="Revoke"
                              title={`Revoke the invitation of ${item.email}?`}
                              detail={<p>The link in the email stops working.</p>}
                              action={() => api().invites.revoke({ params: { orgSlug: org, inviteId: item.inviteId } })}
                              done={() => void invites.reload()}
                            />
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
              void invite
                .run(() =>
                  api().invites.create({ params: { orgSlug: org }, payload: { email, role: role as Role } as never })
                )
                .then((sent) => {
                  if (sent !== undefined) {
                    setEmail("")
                    void invites.reload()
                  }
                })
            }}
          >
            <Field
              label="Email"
              name="email"
              type="email"
              required
              value={email}
              onInput={(e) => setEmail(e.currentTarget.value)}
            />
            <Select label="Role" value={role} options={roles} onChange={setRole} />
            <button type="submit" disabled={invite.busy}>
              Invite
            </button>
          </form>
          <ErrorNote problem={invite.problem} />
        </>
      )}
    </>
  )
}
