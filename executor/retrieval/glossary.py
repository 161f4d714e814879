"""A heading put into Chinese the way a Chinese user asks about an English page: its common words translated by a
small bundled glossary, its names (`Helm`, `util-linux`, `libblkid`) and the words it lacks kept as they are.

Self-calibration asks half of an English page's headings in Chinese. Asked with the English heading inside
("关于Creating a New Translation有什么说明？"), a question shares the page's words, which a Chinese user's question
("怎么给 systemd 新增一种语言的翻译？") does not: fitted on such questions, the ranker learnt that a Chinese
question is answered by word overlap, and scored a user's Chinese paraphrase near 0 (its page first, "nothing
found"). Word by word is no translation, but it puts the meaning in Chinese and leaves only the names shared, as
a user's question does (where the glossary has the words). Written for this project (no dictionary copied): the
words of software documentation's headings, a few hundred.
"""

from __future__ import annotations

import re

from executor.retrieval.vocabulary import STOPWORDS, cjk_words

GLOSSARY: dict[str, str] = {
    en: zh
    for en, zh in (
        line.split(" ", 1)
        for line in """\
access 访问
account 账户
add 添加
address 地址
advanced 高级
agent 代理
alert 告警
allow 允许
api 接口
application 应用
architecture 架构
argument 参数
attribute 属性
authentication 认证
authorization 授权
automatic 自动
backup 备份
basic 基础
behavior 行为
behaviour 行为
binary 二进制
boot 启动
branch 分支
bug 缺陷
build 构建
cache 缓存
call 调用
certificate 证书
change 变更
changelog 变更日志
channel 渠道
chart 图表
check 检查
class 类别
clean 清理
client 客户端
cluster 集群
code 代码
coding 编码
column 列
command 命令
comment 注释
commit 提交
community 社区
compatibility 兼容性
compilation 编译
compile 编译
component 组件
condition 条件
config 配置
configuration 配置
configure 配置
connection 连接
container 容器
content 内容
context 上下文
contribute 贡献
contributing 贡献
control 控制
convention 约定
create 创建
credential 凭据
criteria 标准
current 当前
custom 自定义
data 数据
database 数据库
dataset 数据集
date 日期
day 天
debug 调试
debugging 调试
default 默认
define 定义
definition 定义
delete 删除
dependency 依赖
deploy 部署
deployment 部署
deprecated 弃用
description 说明
design 设计
detail 详情
developer 开发者
development 开发
device 设备
diagnostic 诊断
diff 差异
directory 目录
disable 禁用
disk 磁盘
distribution 发行版
document 文档
documentation 文档
download 下载
edit 编辑
empty 空
enable 启用
environment 环境
error 错误
event 事件
example 示例
exit 退出
export 导出
extension 扩展
feature 特性
file 文件
filesystem 文件系统
filter 过滤
find 查找
fix 修复
flag 标志
folder 文件夹
format 格式
function 函数
general 通用
generate 生成
group 组
guide 指南
handling 处理
help 帮助
history 历史
hook 钩子
host 主机
image 镜像
import 导入
index 索引
information 信息
initialize 初始化
initializing 初始化
input 输入
install 安装
installation 安装
installing 安装
integration 集成
interface 接口
issue 问题
job 任务
kernel 内核
key 键
label 标签
language 语言
layout 布局
level 级别
library 库
license 许可证
limit 限制
line 行
link 链接
list 列表
local 本地
lock 锁
log 日志
logging 日志
lookup 查找
machine 机器
maintainer 维护者
manage 管理
management 管理
manager 管理器
manual 手册
memory 内存
message 消息
method 方法
migration 迁移
mode 模式
model 模型
module 模块
monitor 监控
monitoring 监控
mount 挂载
name 名称
naming 命名
network 网络
new 新
node 节点
number 数量
object 对象
option 选项
order 顺序
output 输出
overview 概述
owner 所有者
package 包
page 页面
parameter 参数
parse 解析
password 密码
path 路径
performance 性能
permission 权限
pipeline 流水线
plugin 插件
policy 策略
port 端口
porting 移植
process 进程
production 生产
program 程序
project 项目
property 属性
protocol 协议
provider 提供者
proxy 代理
publish 发布
query 查询
queue 队列
range 范围
read 读取
record 记录
reference 参考
regression 回归
release 发布
remote 远程
remove 移除
repository 仓库
request 请求
requirement 要求
reserved 保留
resource 资源
response 响应
restore 恢复
result 结果
return 返回
review 评审
role 角色
rollback 回滚
rule 规则
run 运行
running 运行
runtime 运行时
sample 样本
schedule 计划
schema 模式
script 脚本
search 搜索
secret 密钥
section 章节
security 安全
server 服务器
service 服务
session 会话
setting 设置
setup 设置
shell 命令行
signature 签名
size 大小
source 源码
space 空间
special 特殊
standard 标准
start 启动
state 状态
status 状态
step 步骤
storage 存储
string 字符串
structure 结构
style 风格
subcommand 子命令
support 支持
syntax 语法
system 系统
table 表
target 目标
task 任务
template 模板
test 测试
testing 测试
text 文本
time 时间
timeout 超时
tip 技巧
token 令牌
tool 工具
translation 翻译
troubleshooting 故障排查
type 类型
unit 单元
update 更新
upgrade 升级
usage 用法
user 用户
using 使用
validation 校验
value 值
variable 变量
verify 验证
version 版本
volume 卷
warning 警告
workflow 工作流
write 写入
writing 编写""".splitlines()
    )
}
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.\-+#]*|\S")


def _entry(word: str) -> str | None:
    """The glossary's Chinese for an English word, plural or -ing/-ed forms too."""
    low = word.lower()
    for stem in (low, low[:-1] if low.endswith("s") else "", low[:-2] if low.endswith("es") else ""):
        if stem in GLOSSARY:
            return GLOSSARY[stem]
    for suffix in ("ing", "ed"):
        if low.endswith(suffix) and len(low) > len(suffix) + 2:
            base = low[: -len(suffix)]
            for stem in (base, base + "e", base[:-1] if base[-1:] == base[-2:-1] else ""):
                if stem in GLOSSARY:
                    return GLOSSARY[stem]
    return None


def to_chinese(subject: str) -> str | None:
    """`subject` (an English heading) with its glossary words in Chinese and its other words (names, and words the
    glossary lacks) kept; its stop words dropped; None when no word of it is in the glossary."""
    out: list[str] = []
    translated = False
    for word in WORD.findall(subject):
        if not word[0].isalpha() or word.lower() in STOPWORDS:
            continue
        zh = _entry(word)
        if zh is not None:
            if not out or out[-1] != zh:
                out.append(zh)
            translated = True
        else:  # a name, or a word the glossary lacks: kept in English, as a user does who knows no Chinese for it
            out.append(f" {word} ")
    text = re.sub(r"\s+", " ", "".join(out)).strip()
    return text if translated and text else None


# the other way, for matching a Chinese question's words against an English page: each Chinese word with the
# English words (and their plurals) the glossary puts into it (配置: config, configuration, configure)
ENGLISH: dict[str, frozenset[str]] = {
    zh: frozenset(w for en, z in GLOSSARY.items() if z == zh for w in (en, f"{en}s")) for zh in set(GLOSSARY.values())
}


# and each Chinese word's one English word, for asking about a Chinese page in English: the glossary's first
ONE_ENGLISH: dict[str, str] = {}
for _en, _zh in GLOSSARY.items():
    ONE_ENGLISH.setdefault(_zh, _en)
CJK = re.compile(r"[\u3400-\u9fff]+")


def to_english(subject: str) -> str | None:
    """`subject` (a Chinese heading) in the glossary's English words, its names (`Docker Compose`) kept and the
    Chinese words the glossary lacks dropped (an English user writes none); None when the glossary has fewer than
    half of its Chinese words or it comes to one word. Self-calibration asked an English question on a Chinese
    page only where its subject was a name: the ranker never saw an English question on a Chinese page, which
    shares no word with it (only the dense vectors see across), and put a Chinese page sharing one common word
    above it."""
    out: list[str] = []
    chinese = translated = 0
    for part in re.split(r"(\s+|[\u3400-\u9fff]+)", subject):
        if not part.strip():
            continue
        if CJK.fullmatch(part):
            for word in cjk_words(part):
                chinese += 1
                en = ONE_ENGLISH.get(word)
                if en is not None:
                    translated += 1
                    if not out or out[-1] != en:
                        out.append(en)
        elif re.search(r"[A-Za-z0-9]", part):
            out.append(part.strip())
    # one word alone ("config" of 配置位置) is no subject a question could be about
    return " ".join(out) if chinese and 2 * translated >= chinese and len(out) >= 2 else None


def equivalents(term: str, page_language: str) -> frozenset[str]:
    """`term` (a question's, as `vocabulary.terms` writes it) and what a page in `page_language` may write for
    it: a Chinese word's glossary English on an English page; any other term stays itself. Only this way round:
    an English question's words put into Chinese made the Chinese page of its answer outrank the English one
    (Helm: best page in the other language for 29 of 105 questions -> 36, HIGHLY_RELEVANT 11 -> 9)."""
    if page_language == "en" and not term.isascii():
        return ENGLISH.get(term, frozenset()) | {term}
    return frozenset({term})
