"""The bundled null pool: questions that a team's documentation almost never answers, in English and Chinese.

Self-calibration (`retrieval.self_calibration`) scores them against a KB so that "nothing found" sits on that KB's
own scale: how high an unanswerable question scores there. Two kinds, because a KB's off-topic questions are not
all far from it: *far* ones (cooking, law, tax, travel, health) and *near* ones, from neighbouring technical fields
(other databases, other ops and build tools, service meshes, cloud billing, front-end frameworks), some of them
naming no product at all, so that the KB's own vocabulary cannot give them away. A question
whose words the KB does name (its L0 layer matches a title or keyword) is left out for that KB, since the KB may
well answer it. Written for this project; no corpus was copied.
"""

from __future__ import annotations

FAR_EN = (
    "How long should I rest a steak after grilling it?",
    "What is the best way to keep basil fresh in the fridge?",
    "Can a landlord keep my deposit for normal wear and tear?",
    "How do I file a small claims lawsuit against a contractor?",
    "Which expenses can a freelancer deduct on their income tax return?",
    "How do I apply for a refund of overpaid property tax?",
    "What vaccinations do I need before travelling to Kenya?",
    "How many hours of sleep does a teenager need?",
    "How do I get red wine out of a wool carpet?",
    "What is the difference between a will and a living trust?",
    "How should I train for my first half marathon?",
    "Which houseplants are safe for cats?",
    "How do I fix a squeaky wooden floorboard?",
    "What documents are needed to renew a passport for a child?",
    "How long can cooked rice stay in the refrigerator?",
    "How do I change a flat tyre on a bicycle?",
)

NEAR_EN = (
    "How do I tune the WiredTiger cache size in MongoDB?",
    "How do I add a new node to a Cassandra ring without downtime?",
    "What does the Oracle error ORA-01555 snapshot too old mean?",
    "How do I rebalance shards in an Elasticsearch cluster?",
    "How do I write an Ansible playbook that restarts a systemd service?",
    "How do I import existing cloud resources into Terraform state?",
    "How do I configure Istio mutual TLS between two namespaces?",
    "How do I set up a Linkerd traffic split for a canary release?",
    "How do I write a Jenkinsfile with parallel stages?",
    "How do I pin a dependency version in a Gradle build?",
    "How do I reduce the bundle size of a React app built with webpack?",
    "How do I enable two-factor authentication for an AWS root account?",
    "How do I migrate a Subversion repository to Git with history?",
    "What is the difference between Kafka consumer groups and partitions?",
    "How do I schedule a cron job in a Windows task scheduler?",
    "How do I configure Consul service discovery health checks?",
)

FAR_ZH = (
    "红烧肉怎么做才不会太油腻？",
    "蒸鱼一般要蒸几分钟？",
    "租房合同到期房东不退押金怎么办？",
    "劳动仲裁需要准备哪些材料？",
    "个人所得税专项附加扣除怎么申报？",
    "个体户每季度的增值税怎么计算？",
    "去日本旅游需要办什么签证？",
    "小孩发烧到多少度需要去医院？",
    "新买的房子甲醛超标怎么处理？",
    "离婚时共同财产怎么分割？",
    "跑步膝盖疼是什么原因？",
    "多肉植物冬天怎么养？",
    "驾照到期了怎么换证？",
    "孕妇可以吃螃蟹吗？",
    "公积金贷款和商业贷款哪个划算？",
    "猫咪不吃东西是怎么回事？",
)

NEAR_ZH = (
    "MongoDB 的副本集选举是怎么进行的？",
    "达梦数据库怎么创建表空间？",
    "Elasticsearch 集群状态变红了怎么处理？",
    "ClickHouse 的物化视图怎么用？",
    "Ansible 怎么批量修改服务器的主机名？",
    "Terraform 的状态文件被锁住了怎么解锁？",
    "Istio 的 sidecar 注入失败怎么排查？",
    "服务网格里的金丝雀发布怎么配流量比例？",
    "Jenkins 流水线怎么配置定时构建？",
    "Maven 依赖冲突怎么排除？",
    "Vue 项目打包后白屏怎么解决？",
    "阿里云的账单怎么按项目拆分？",
    "Kafka 消费者重平衡太频繁怎么办？",
    "Zabbix 怎么添加自定义监控项？",
    "Windows 服务器远程桌面连不上怎么办？",
    "微信小程序怎么接入支付？",
)

# near the field without a product name: words every ops KB knows (so `unknown_names` cannot tell them apart),
# on tasks a team's own documentation rarely covers
GENERIC_EN = (
    "How do I write a firewall rule that only lets SSH in from the office network?",
    "How do I set up an SPF and DKIM record so our mail is not marked as spam?",
    "How do I keep server clocks in sync across machines?",
    "How do I replace a failed disk in a software RAID array?",
    "How do I set up a site-to-site VPN between two offices?",
    "How do I squash several commits into one before merging a branch?",
    "How do I install the GPU driver on a fresh Linux workstation?",
    "How do I size a message queue's dead-letter handling for poison messages?",
    "How do I run an A/B test on a landing page and read the result?",
    "How do I publish a new version of a mobile app to the app stores?",
    "How do I resize a partition on a running Linux server?",
    "How do I migrate users' mailboxes from one mail provider to another?",
)
GENERIC_ZH = (
    "怎么配置防火墙只允许办公网访问 SSH？",
    "公司邮件总被当成垃圾邮件，SPF 和 DKIM 记录怎么配？",
    "多台服务器的时间不同步怎么处理？",
    "软 RAID 里坏了一块盘怎么更换？",
    "两个办公室之间怎么搭建站点到站点的 VPN？",
    "合并分支前怎么把多个提交压成一个？",
    "新装的 Linux 工作站怎么安装显卡驱动？",
    "落地页的 A/B 测试怎么做，结果怎么看？",
    "手机 App 新版本怎么提交到应用商店审核？",
    "线上 Linux 服务器的分区怎么在不停机的情况下扩容？",
    "企业邮箱从一家服务商迁移到另一家怎么操作？",
    "办公室打印机连不上网络怎么排查？",
)

POOL: tuple[str, ...] = FAR_EN + NEAR_EN + GENERIC_EN + FAR_ZH + NEAR_ZH + GENERIC_ZH
