//! The human loop page's data (`/admin/loop`, admins): `human_loop::measure`
//! over the viewer's tenant, as the page's view types.

use app::views::{ChannelSpread, ConsoleError, DayCount, HumanLoopPage, Viewer};

use super::{unavailable, ConsoleService};
use crate::evidence::human_loop::{self, Spread};
use crate::platform::clock::Clock;

fn spread(s: Spread) -> ChannelSpread {
    ChannelSpread { channel: s.channel, count: s.count, median_secs: s.median_secs, p90_secs: s.p90_secs }
}

impl ConsoleService {
    pub(super) async fn human_loop_page(&self, viewer: &Viewer) -> Result<HumanLoopPage, ConsoleError> {
        if !viewer.is_admin() {
            return Err(ConsoleError::Forbidden);
        }
        let measured =
            human_loop::measure(&self.state, &viewer.tenant_id, self.state.now()).await.map_err(unavailable)?;
        Ok(HumanLoopPage {
            days: measured
                .days
                .into_iter()
                .map(|d| DayCount {
                    day: d.day.format("%Y-%m-%d").to_string(),
                    approvals: d.approvals,
                    rejections: d.rejections,
                    expiries: d.expiries,
                    escalations: d.escalations,
                })
                .collect(),
            decisions: measured.decisions.into_iter().map(spread).collect(),
            notices: measured.notices.into_iter().map(spread).collect(),
        })
    }
}
