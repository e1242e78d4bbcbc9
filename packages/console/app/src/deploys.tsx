import type { DeploymentsApi } from "@hostplane/api/deployments/DeploymentsApi"
import type { PromiseClientOf } from "@hostplane/client/ClientOf"
import { enc } from "./router.tsx"
import { DangerButton, time } from "./ui.tsx"

export interface DeploymentRow {
  readonly id: string
  readonly version: number
  readonly createdAt: string
  readonly uploadedBy: string
  readonly live: boolean
  readonly files: number
  readonly git: {
    readonly commit: string | null
    readonly message: string | null
    readonly branch: string | null
  } | null
}

export const commitOf = (deployment: DeploymentRow) =>
  deployment.git?.commit ? (
    <>
      <code>{deployment.git.commit.slice(0, 12)}</code>
      {deployment.git.branch && <> on {deployment.git.branch}</>}
      {deployment.git.message && <span class="muted"> {deployment.git.message.split("\n")[0]}</span>}
    </>
  ) : (
    <span class="muted">no commit recorded</span>
  )

/** Deployments with Rollback on each one not live; the dialog names the version it makes live. */
export const DeploymentTable = (props: {
  readonly org: string
  readonly project: string
  readonly items: ReadonlyArray<DeploymentRow>
  readonly canRollback: boolean
  readonly client: () => PromiseClientOf<typeof DeploymentsApi>
  readonly done: () => void
}) => (
  <table>
    <thead>
      <tr>
        <th>Version</th>
        <th>Created</th>
        <th>Commit</th>
        <th>Files</th>
        <th>
          <span class="muted">Action</span>
        </th>
      </tr>
    </thead>
    <tbody>
      {props.items.map((deployment) => (
        <tr key={deployment.id}>
          <td>
            v{deployment.version} {deployment.live && <span class="badge live">live</span>}
          </td>
          <td>{time(deployment.createdAt)}</td>
          <td>{commitOf(deployment)}</td>
          <td>{deployment.files}</td>
          <td>
            {!deployment.live && (
              <DangerButton
                label="Rollback"
                title={`Roll back to version ${deployment.version}?`}
                detail={
                  <p>
                    Version {deployment.version} ({deployment.id}) becomes live for {props.project} at once; the current
                    version stays in the list.
                  </p>
                }
                disabled={!props.canRollback}
                action={() =>
                  props.client().deployments.rollback({
                    params: { orgSlug: props.org, projectName: props.project },
                    payload: { deploymentId: deployment.id as never }
                  })
                }
                done={props.done}
              />
            )}
          </td>
        </tr>
      ))}
    </tbody>
  </table>
)

export const projectPath = (org: string, project: string) => `/orgs/${enc(org)}/projects/${enc(project)}`
